"""openapi-python-client names a field called ``type`` ``type_`` (the name shadows a builtin);
every generated model with one gets ``type`` back here, read-only, so ``run.stopping_reason.type``
reads as the API document and the other client say."""

from __future__ import annotations

import attrs

from .openapi import models


def _type_of(self: object) -> object:
    return getattr(self, "type_")


def add_type_properties() -> list[type]:
    """Gives each generated model with a ``type_`` field a ``type`` property; returns those models."""
    given = []
    for name in models.__all__:
        cls = getattr(models, name)
        if isinstance(cls, type) and attrs.has(cls) and any(f.name == "type_" for f in attrs.fields(cls)):
            if not isinstance(getattr(cls, "type", None), property):
                cls.type = property(_type_of, doc="The document's `type` field (the generator's `type_`).")
            given.append(cls)
    return given


ALIASED = add_type_properties()
