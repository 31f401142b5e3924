//! Server-side `Table` output: what `kubectl get` prints.
//!
//! A client that sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` gets a
//! `meta.k8s.io/v1` `Table` instead of objects: the column definitions and one row of
//! cells per object, computed by the kind's printer ([`crate::registry::table`]). Each
//! row carries the object as asked by the `includeObject` query parameter: `None`,
//! `Metadata` (the default: a `PartialObjectMetadata`) or `Object` (the whole object in
//! the request's version).

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use crate::endpoints::request::Query;
use crate::registry::catalog::ResourceDef;
use crate::registry::table::{Printer, Row, DEFAULT, SCALE};
use apimachinery::status::{ApiError, ApiResult};

/// `includeObject`: what each row carries of its object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// Nothing (`"object": null`).
    None,
    /// A `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object in the request's version.
    Object,
}

/// The `meta.k8s.io` version a table was asked in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MetaVersion {
    /// `meta.k8s.io/v1`.
    #[default]
    V1,
    /// `meta.k8s.io/v1beta1`.
    V1beta1,
}

impl MetaVersion {
    /// `apiVersion` of tables and partial objects in this version.
    pub fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => "meta.k8s.io/v1",
            MetaVersion::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// Options of a table request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableOptions {
    /// `meta.k8s.io` version of the table.
    pub version: MetaVersion,
    /// `includeObject`.
    pub include: IncludeObject,
}

impl TableOptions {
    /// Read `includeObject` from the query; 400 for unknown values, with upstream's
    /// message.
    pub fn with_query(mut self, query: &Query) -> ApiResult<TableOptions> {
        self.include = match query.get("includeObject") {
            None | Some("") | Some("Metadata") => IncludeObject::Metadata,
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
                    Value::String(other.to_string())
                )))
            }
        };
        Ok(self)
    }
}

/// Turns objects of one resource into table rows and tables.
pub struct Tabulator {
    def: &'static ResourceDef,
    printer: &'static Printer,
    /// A custom resource's printer columns (instead of `printer`).
    custom: Option<&'static crate::registry::catalog::CustomVersion>,
    opts: TableOptions,
    /// Fixed printing time (tests); `None` prints at the current time.
    now: Option<DateTime<Utc>>,
    /// Whether embedded objects are converted to `def`'s version (false for `Scale`).
    convert: bool,
}

impl Tabulator {
    /// For objects of `def`, printed at the current time.
    pub fn new(def: &'static ResourceDef, opts: TableOptions) -> Tabulator {
        Tabulator {
            def,
            printer: def.strategy.printer().unwrap_or(&DEFAULT),
            custom: def.custom,
            opts,
            now: None,
            convert: true,
        }
    }

    /// For `Scale` objects of `def`'s `/scale` subresource.
    pub fn scale(def: &'static ResourceDef, opts: TableOptions) -> Tabulator {
        Tabulator {
            printer: &SCALE,
            custom: None,
            convert: false,
            ..Tabulator::new(def, opts)
        }
    }

    /// Print as of `now` instead of the current time (tests).
    #[cfg(test)]
    pub fn at(mut self, now: DateTime<Utc>) -> Tabulator {
        self.now = Some(now);
        self
    }

    /// The column definitions.
    pub fn columns(&self) -> Value {
        if let Some(custom) = self.custom {
            return crate::registry::custom::table_columns(custom);
        }
        Value::Array(
            self.printer
                .columns
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name,
                        "type": c.ty,
                        "format": c.format,
                        "description": c.desc.text(crate::registry::catalog::definitions()),
                        "priority": c.priority,
                    })
                })
                .collect(),
        )
    }

    /// The row of one object, given in its stored representation.
    pub fn row(&self, stored: &Value) -> ApiResult<Value> {
        let now = self.now.unwrap_or_else(Utc::now);
        let Row { cells, conditions } = match self.custom {
            Some(custom) => crate::registry::custom::table_row(custom, stored, now),
            None => (self.printer.print)(stored, now),
        };
        let mut row = Map::new();
        row.insert("cells".into(), Value::Array(cells));
        if let Some(c) = conditions {
            row.insert("conditions".into(), c);
        }
        let initial_end = stored
            .pointer("/metadata/annotations/k8s.io~1initial-events-end")
            .is_some_and(|v| v.as_str() == Some("true"));
        let object = match self.opts.include {
            IncludeObject::Object if self.convert => {
                crate::registry::versions::present_value(self.def, stored.clone())?
            }
            IncludeObject::Object => stored.clone(),
            IncludeObject::None if !initial_end => Value::Null,
            IncludeObject::Metadata | IncludeObject::None => json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": self.opts.version.api_version(),
                "metadata": stored.get("metadata").cloned().unwrap_or_else(|| json!({})),
            }),
        };
        row.insert("object".into(), object);
        Ok(Value::Object(row))
    }

    /// A table of `rows` with list metadata `metadata`; `headers` false gives
    /// `"columnDefinitions": null` (watch events after the first).
    pub fn table(&self, metadata: Map<String, Value>, rows: Vec<Value>, headers: bool) -> Value {
        json!({
            "kind": "Table",
            "apiVersion": self.opts.version.api_version(),
            "metadata": metadata,
            "columnDefinitions": if headers { self.columns() } else { Value::Null },
            "rows": rows,
        })
    }

    /// The table of one object: its row, and its resourceVersion as the table's.
    pub fn object_table(&self, stored: &Value, headers: bool) -> ApiResult<Value> {
        let mut meta = Map::new();
        if let Some(rv) = stored.pointer("/metadata/resourceVersion") {
            meta.insert("resourceVersion".into(), rv.clone());
        }
        Ok(self.table(meta, vec![self.row(stored)?], headers))
    }
}

#[cfg(test)]
mod tests;
