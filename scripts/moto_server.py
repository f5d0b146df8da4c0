"""moto's server with one request applied at a time.

DynamoDB checks a transaction's conditions and applies its writes atomically; moto's threaded
server does not, so two concurrent conditional writes can both pass. Serialising requests gives
the emulator the atomicity the real services have (connections are still served concurrently).
Do not use SQS long polling against it: a waiting receive would hold the lock.
"""

import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()


def serialised(environ, start_response):
    with lock:
        return list(app(environ, start_response))


if __name__ == "__main__":
    run_simple(
        "127.0.0.1",
        int(sys.argv[1]),
        serialised,
        threaded=True,
        request_handler=MotoRequestHandler,
    )
