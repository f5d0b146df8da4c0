//! On-demand capacity a DynamoDB write consumes, modelled from the requests themselves (the
//! cost benchmark): item sizes by DynamoDB's sizing rules, 1 WRU per started KB (2 inside a
//! transaction), plus the writes each global secondary index takes, which depend on what the
//! item held before. The model remembers every item it saw written for that.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// What a global secondary index copies from the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Projection {
    All,
    KeysOnly,
    Include(&'static [&'static str]),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexSpec {
    pub name: &'static str,
    pub pk: &'static str,
    pub sk: &'static str,
    pub projection: Projection,
}

type Item = Map<String, Value>;

/// Bytes of one attribute value, by DynamoDB's rules: strings and binaries by length, numbers
/// by about one byte per two significant digits plus one, documents 3 bytes plus their
/// elements (and one byte per element).
fn value_size(v: &Value) -> usize {
    let Some((kind, inner)) = v.as_object().and_then(|o| o.iter().next()) else {
        return 0;
    };
    match (kind.as_str(), inner) {
        ("S", Value::String(s)) => s.len(),
        ("N", Value::String(n)) => number_size(n),
        ("B", Value::String(b)) => binary_size(b),
        ("BOOL" | "NULL", _) => 1,
        ("SS", Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::len).sum(),
        ("NS", Value::Array(a)) => a.iter().filter_map(Value::as_str).map(number_size).sum(),
        ("BS", Value::Array(a)) => a.iter().filter_map(Value::as_str).map(binary_size).sum(),
        ("L", Value::Array(a)) => 3 + a.iter().map(|e| value_size(e) + 1).sum::<usize>(),
        ("M", Value::Object(m)) => {
            3 + m
                .iter()
                .map(|(k, e)| k.len() + value_size(e) + 1)
                .sum::<usize>()
        }
        _ => 0,
    }
}

fn number_size(n: &str) -> usize {
    let digits = n
        .trim_start_matches(['-', '+'])
        .trim_start_matches(['0', '.'])
        .chars()
        .filter(char::is_ascii_digit)
        .count();
    digits.div_ceil(2) + 1
}

fn binary_size(b64: &str) -> usize {
    aws_smithy_types::base64::decode(b64).map_or(b64.len(), |b| b.len())
}

pub fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

fn kb(bytes: usize) -> u64 {
    bytes.div_ceil(1024).max(1) as u64
}

fn in_index(item: &Item, ix: &IndexSpec) -> bool {
    item.contains_key(ix.pk) && item.contains_key(ix.sk)
}

/// The attributes an index stores of an item.
fn entry(item: &Item, ix: &IndexSpec) -> Item {
    item.iter()
        .filter(|(k, _)| {
            matches!(k.as_str(), "PK" | "SK")
                || *k == ix.pk
                || *k == ix.sk
                || match ix.projection {
                    Projection::All => true,
                    Projection::KeysOnly => false,
                    Projection::Include(names) => names.contains(&k.as_str()),
                }
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Index write units of replacing `old` with `new` (either may be absent): a moved key is a
/// delete and a put, a changed projection one put, an unchanged entry nothing.
fn index_units(old: Option<&Item>, new: Option<&Item>, ix: &IndexSpec) -> u64 {
    let old = old.filter(|i| in_index(i, ix)).map(|i| entry(i, ix));
    let new = new.filter(|i| in_index(i, ix)).map(|i| entry(i, ix));
    match (old, new) {
        (None, None) => 0,
        (Some(o), None) => kb(item_size(&o)),
        (None, Some(n)) => kb(item_size(&n)),
        (Some(o), Some(n)) if o.get(ix.pk) != n.get(ix.pk) || o.get(ix.sk) != n.get(ix.sk) => {
            kb(item_size(&o)) + kb(item_size(&n))
        }
        (Some(o), Some(n)) if o != n => kb(item_size(&n)),
        _ => 0,
    }
}

/// Table items as last written, to price index writes and updates.
#[derive(Debug, Default)]
pub struct WriteModel {
    indexes: Vec<IndexSpec>,
    items: HashMap<(String, String), Item>,
}

fn key_of(item: &Item) -> (String, String) {
    let k = |n: &str| item.get(n).map(Value::to_string).unwrap_or_default();
    (k("PK"), k("SK"))
}

impl WriteModel {
    pub fn new(indexes: &[IndexSpec]) -> Self {
        WriteModel {
            indexes: indexes.to_vec(),
            items: HashMap::new(),
        }
    }

    fn put(&mut self, item: &Item, factor: u64) -> u64 {
        let old = self.items.insert(key_of(item), item.clone());
        let table = factor * kb(item_size(item).max(old.as_ref().map_or(0, item_size)));
        let index: u64 = self
            .indexes
            .iter()
            .map(|ix| index_units(old.as_ref(), Some(item), ix))
            .sum();
        table + index
    }

    /// An update or delete is billed on the item's larger size; its new content is not
    /// modelled (this project never updates an indexed item in place).
    fn touch(&mut self, key: &Item, factor: u64, delete: bool) -> u64 {
        let k = key_of(key);
        let old = if delete {
            self.items.remove(&k)
        } else {
            self.items.get(&k).cloned()
        };
        let index: u64 = if delete {
            self.indexes
                .iter()
                .map(|ix| index_units(old.as_ref(), None, ix))
                .sum()
        } else {
            0
        };
        factor * kb(old.as_ref().map_or(0, item_size)) + index
    }

    /// Write units of one request, from its JSON body.
    pub fn write_units(&mut self, op: &str, body: &[u8]) -> u64 {
        let Ok(req) = serde_json::from_slice::<Value>(body) else {
            return 0;
        };
        let obj = |v: &Value| v.as_object().cloned().unwrap_or_default();
        match op {
            "dynamodb:PutItem" => self.put(&obj(&req["Item"]), 1),
            "dynamodb:UpdateItem" => self.touch(&obj(&req["Key"]), 1, false),
            "dynamodb:DeleteItem" => self.touch(&obj(&req["Key"]), 1, true),
            "dynamodb:TransactWriteItems" => req["TransactItems"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .map(|i| {
                            if let Some(p) = i.get("Put") {
                                self.put(&obj(&p["Item"]), 2)
                            } else if let Some(u) = i.get("Update") {
                                self.touch(&obj(&u["Key"]), 2, false)
                            } else if let Some(d) = i.get("Delete") {
                                self.touch(&obj(&d["Key"]), 2, true)
                            } else {
                                2
                            }
                        })
                        .sum()
                })
                .unwrap_or(0),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const BY_USER: IndexSpec = IndexSpec {
        name: "GSI1",
        pk: "GSI1PK",
        sk: "GSI1SK",
        projection: Projection::Include(&["status"]),
    };
    const ALL: IndexSpec = IndexSpec {
        name: "GSI2",
        pk: "GSI2PK",
        sk: "GSI2SK",
        projection: Projection::All,
    };

    fn item(v: Value) -> Item {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn sizes_follow_dynamodbs_rules_for_strings_numbers_and_binaries() {
        // "PK" + "RUN#r" = 7; "n" + 3 digits (2 bytes + 1) = 4; "b" + 4 raw bytes = 5.
        let i = item(json!({"PK": {"S": "RUN#r"}, "n": {"N": "123"}, "b": {"B": "AAECAw=="}}));
        assert_eq!(item_size(&i), 7 + 4 + 5);
    }

    #[test]
    fn a_transactional_put_costs_two_units_per_started_kilobyte_and_an_update_prices_the_stored_item()
     {
        let mut m = WriteModel::new(&[]);
        let big = json!({"PK": {"S": "RUN#r"}, "SK": {"S": "RUN"}, "x": {"S": "x".repeat(1500)}});
        let body = json!({"TransactItems": [{"Put": {"Item": big}}]});
        assert_eq!(
            m.write_units("dynamodb:TransactWriteItems", body.to_string().as_bytes()),
            4
        );
        let upd = json!({"Key": {"PK": {"S": "RUN#r"}, "SK": {"S": "RUN"}}});
        assert_eq!(
            m.write_units("dynamodb:UpdateItem", upd.to_string().as_bytes()),
            2
        );
        assert_eq!(m.write_units("dynamodb:GetItem", b"{}"), 0);
    }

    #[test]
    fn an_index_is_written_only_when_its_entry_changes_and_a_moved_key_costs_a_delete_and_a_put() {
        let mut m = WriteModel::new(&[BY_USER, ALL]);
        let run = |status: &str, at: &str, note: &str| {
            json!({"Item": {"PK": {"S": "RUN#r"}, "SK": {"S": "RUN"}, "status": {"S": status},
                "note": {"S": note}, "GSI1PK": {"S": "USER#u"}, "GSI1SK": {"S": "1#r"},
                "GSI2PK": {"S": "SWEEP"}, "GSI2SK": {"S": at}}})
            .to_string()
        };
        // New item: table 1 + one entry in each index.
        assert_eq!(
            m.write_units("dynamodb:PutItem", run("queued", "1", "a").as_bytes()),
            3
        );
        // Only a non-projected attribute changed: GSI1 untouched, GSI2 (ALL) rewritten.
        assert_eq!(
            m.write_units("dynamodb:PutItem", run("queued", "1", "b").as_bytes()),
            2
        );
        // GSI2's sort key moved: a delete and a put there; the status changed GSI1's entry.
        assert_eq!(
            m.write_units("dynamodb:PutItem", run("running", "2", "b").as_bytes()),
            4
        );
        // Deleting the item removes both entries.
        let key = json!({"Key": {"PK": {"S": "RUN#r"}, "SK": {"S": "RUN"}}}).to_string();
        assert_eq!(m.write_units("dynamodb:DeleteItem", key.as_bytes()), 3);
    }
}
