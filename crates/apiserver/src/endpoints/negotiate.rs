//! `Accept` negotiation as upstream's `negotiation.NegotiateMediaTypeOptions`: the
//! clauses of the header, best quality first, are matched against the media types the
//! server serialises; parameters `as`, `g` and `v` ask for a transformation
//! (`PartialObjectMetadata`, `PartialObjectMetadataList` or `Table` in `meta.k8s.io`
//! `v1`/`v1beta1`). The first clause the server can serve wins; when none can, the
//! request fails with 406 `NotAcceptable`.
//!
//! The clause also decides the body's [`Format`]: JSON, or Kubernetes protobuf for
//! built-in kinds. Custom resources have no protobuf schema: as upstream's CRD handler
//! (whose standard serialisers leave protobuf out), a protobuf clause is skipped for
//! them unless it asks for `PartialObjectMetadata`, which is a built-in type.

use crate::endpoints::table::{MetaVersion, TableOptions};
use apimachinery::status::{ApiError, ApiResult};

use crate::registry::catalog::ResourceDef;

/// How objects are rendered in a response, negotiated from `Accept`
/// ([`super::negotiate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rendering {
    /// The whole object in the request's version.
    Full,
    /// `meta.k8s.io/v1` `PartialObjectMetadata`: kind, apiVersion and metadata only.
    Metadata,
    /// A `meta.k8s.io` `Table` ([`crate::registry::table`]).
    Table(TableOptions),
}

/// The serialisation of a response body, negotiated from `Accept` with the rendering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `application/json` (also what a YAML clause gets).
    Json,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

impl Format {
    /// The format of answers (objects and errors) to a request with this `Accept`, for a
    /// custom resource or not; JSON when nothing is acceptable (the 406 itself is JSON
    /// then, as upstream's fallback).
    pub fn for_accept(accept: &str, custom: bool) -> Format {
        negotiate_for(accept, custom).map_or(Format::Json, |(_, f)| f)
    }

    /// The `Content-Type` of a body in this format; `watch` for the watch stream.
    pub fn content_type(self, watch: bool) -> &'static str {
        match (self, watch) {
            (Format::Json, _) => "application/json",
            (Format::Protobuf, false) => "application/vnd.kubernetes.protobuf",
            (Format::Protobuf, true) => "application/vnd.kubernetes.protobuf;stream=watch",
        }
    }
}

impl Rendering {
    /// From an `Accept` header: the first clause this server can produce wins; 406 when
    /// there is none.
    pub fn negotiate(accept: &str) -> ApiResult<Rendering> {
        negotiate(accept)
    }

    /// `kind` and `apiVersion` of a list in this rendering.
    pub fn list_kind(self, def: &ResourceDef) -> (String, String) {
        match self {
            Rendering::Full => (def.list_kind(), def.api_version()),
            Rendering::Metadata => ("PartialObjectMetadataList".into(), "meta.k8s.io/v1".into()),
            Rendering::Table(o) => ("Table".into(), o.version.api_version().into()),
        }
    }

    /// `kind` and `apiVersion` of one object in this rendering.
    pub fn object_kind(self, def: &ResourceDef) -> (String, String) {
        match self {
            Rendering::Full => (def.kind.to_string(), def.api_version()),
            Rendering::Metadata => ("PartialObjectMetadata".into(), "meta.k8s.io/v1".into()),
            Rendering::Table(o) => ("Table".into(), o.version.api_version().into()),
        }
    }
}

/// Whether a resource's objects are served without protobuf: custom resources, and
/// any built-in kind the protobuf tables do not cover (negotiated like custom resources).
pub fn json_only(def: &ResourceDef) -> bool {
    def.custom.is_some()
        || !crate::machinery::protobuf::encode::encodable(&def.api_version(), def.kind)
}

/// Media types the server serialises, in upstream's order (`type`, `subtype`, whether it
/// has a streaming form for watches).
const SERIALIZERS: &[(&str, &str, bool)] = &[
    ("application", "json", true),
    ("application", "yaml", false),
    ("application", "vnd.kubernetes.protobuf", true),
];

/// One clause of an `Accept` header.
#[derive(Debug, PartialEq)]
struct Clause<'a> {
    ty: &'a str,
    subtype: &'a str,
    q: f64,
    params: Vec<(&'a str, &'a str)>,
}

impl Clause<'_> {
    fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }
}

/// Parse an `Accept` header like `goautoneg.ParseAccept`: clauses without a `/` (other
/// than `*`) are dropped; the rest are ordered by quality, then specificity.
fn parse(header: &str) -> Vec<Clause<'_>> {
    let mut out = Vec::new();
    for part in header.split(',') {
        let mut pieces = part.trim_matches(' ').split(';');
        let range = pieces.next().unwrap_or("");
        let mut sp = range.split('/');
        let ty = sp.next().unwrap_or("").trim_matches(' ');
        let subtype = match (sp.next(), sp.next()) {
            (None, _) if ty == "*" => "*",
            (Some(s), None) => s.trim_matches(' '),
            _ => continue,
        };
        let mut clause = Clause {
            ty,
            subtype,
            q: 1.0,
            params: Vec::new(),
        };
        for param in pieces {
            let Some((k, v)) = param.split_once('=') else {
                continue;
            };
            let k = k.trim_matches(' ');
            if k == "q" {
                clause.q = v.trim().parse().unwrap_or(0.0);
            } else {
                clause.params.push((k, v.trim_matches(' ')));
            }
        }
        out.push(clause);
    }
    out.sort_by(|a, b| {
        b.q.partial_cmp(&a.q)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then((a.ty == "*").cmp(&(b.ty == "*")))
            .then((a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    out
}

/// What a clause asks for, if this server can produce it with the serialiser `ser` for a
/// custom resource (`custom`) or a built-in kind.
fn accept(clause: &Clause<'_>, ser: &(&str, &str, bool), custom: bool) -> Option<Rendering> {
    let (ty, subtype, streams) = *ser;
    if let Some(stream) = clause.param("stream").filter(|s| !s.is_empty()) {
        if !streams || stream != "watch" {
            return None;
        }
    }
    if clause
        .param("sv")
        .is_some_and(|v| !v.is_empty() && v != "v1")
    {
        return None;
    }
    let (kind, group, version) = (clause.param("as"), clause.param("g"), clause.param("v"));
    if kind.is_none() && group.is_none() && version.is_none() {
        // upstream: no transformation, so the endpoint's own serialisers decide
        if custom && subtype == "vnd.kubernetes.protobuf" {
            return None;
        }
        return Some(Rendering::Full);
    }
    let version = match (group, version) {
        (Some("meta.k8s.io"), Some("v1")) => MetaVersion::V1,
        (Some("meta.k8s.io"), Some("v1beta1")) => MetaVersion::V1beta1,
        _ => return None,
    };
    match kind {
        Some("Table") if ty == "application" && (subtype == "json" || subtype == "yaml") => {
            Some(Rendering::Table(TableOptions {
                version,
                ..TableOptions::default()
            }))
        }
        Some("PartialObjectMetadata") | Some("PartialObjectMetadataList") => {
            Some(Rendering::Metadata)
        }
        _ => None,
    }
}

/// The rendering an `Accept` header asks for; 406 when the server can serve none of its
/// clauses. An empty header asks for plain objects.
pub fn negotiate(header: &str) -> ApiResult<Rendering> {
    negotiate_for(header, false).map(|(r, _)| r)
}

/// The rendering and format an `Accept` header asks for, for a custom resource or a
/// built-in kind; 406 when the server can serve none of its clauses.
pub fn negotiate_for(header: &str, custom: bool) -> ApiResult<(Rendering, Format)> {
    if header.trim().is_empty() {
        return Ok((Rendering::Full, Format::Json));
    }
    for clause in parse(header) {
        for ser in SERIALIZERS {
            let matches = (clause.ty == ser.0
                && (clause.subtype == ser.1 || clause.subtype == "*"))
                || (clause.ty == "*" && clause.subtype == "*");
            if !matches {
                continue;
            }
            if let Some(r) = accept(&clause, ser, custom) {
                let format = if ser.1 == "vnd.kubernetes.protobuf" {
                    Format::Protobuf
                } else {
                    Format::Json
                };
                return Ok((r, format));
            }
        }
    }
    Err(ApiError::new(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(version: MetaVersion) -> Rendering {
        Rendering::Table(TableOptions {
            version,
            ..TableOptions::default()
        })
    }

    #[test]
    fn kubectl_get_asks_for_tables() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(negotiate(kubectl).expect("ok"), table(MetaVersion::V1));
        assert_eq!(
            negotiate("application/json;as=Table;v=v1beta1;g=meta.k8s.io").expect("ok"),
            table(MetaVersion::V1beta1)
        );
        assert_eq!(
            negotiate("application/json; as=Table; g=meta.k8s.io; v=v1").expect("ok"),
            table(MetaVersion::V1)
        );
        assert_eq!(
            negotiate("*/*;as=Table;g=meta.k8s.io;v=v1").expect("ok"),
            table(MetaVersion::V1)
        );
    }

    #[test]
    fn plain_and_metadata() {
        for h in [
            "",
            "application/json",
            "*/*",
            "application/*",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
            "application/vnd.kubernetes.protobuf, */*",
            "application/json;stream=watch",
            "text/html, application/json;q=0.9",
        ] {
            assert_eq!(negotiate(h).expect(h), Rendering::Full, "{h}");
        }
        assert_eq!(
            negotiate(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            )
            .expect("ok"),
            Rendering::Metadata
        );
    }

    #[test]
    fn unsupported_forms_fall_through_or_fail() {
        // an unsupported transformation is skipped for the next clause
        assert_eq!(
            negotiate("application/json;as=Widget;g=meta.k8s.io;v=v1,application/json")
                .expect("ok"),
            Rendering::Full
        );
        assert_eq!(
            negotiate(
                "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json"
            )
            .expect("ok"),
            Rendering::Full
        );
        // quality decides the order
        assert_eq!(
            negotiate("application/json;q=0.5,application/json;as=Table;g=meta.k8s.io;v=v1")
                .expect("ok"),
            table(MetaVersion::V1)
        );
        for h in [
            "application/json;as=Table;v=v2;g=meta.k8s.io",
            "application/json;as=Table;v=v1;g=example.com",
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
            "text/plain",
            "application/yaml;stream=watch",
        ] {
            let e = negotiate(h).expect_err(h);
            assert_eq!(e.code, 406, "{h}");
            assert_eq!(e.reason, "NotAcceptable");
            assert_eq!(
                e.message,
                "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
            );
        }
    }

    /// What client-go asks for: protobuf for built-in kinds, JSON for custom resources
    /// (where protobuf alone is not acceptable), protobuf metadata for both.
    #[test]
    fn formats() {
        let client_go = "application/vnd.kubernetes.protobuf, application/json";
        let f = negotiate_for;
        assert_eq!(
            f(client_go, false).unwrap(),
            (Rendering::Full, Format::Protobuf)
        );
        assert_eq!(f(client_go, true).unwrap(), (Rendering::Full, Format::Json));
        assert_eq!(
            f(
                "application/json, application/vnd.kubernetes.protobuf",
                false
            )
            .unwrap(),
            (Rendering::Full, Format::Json)
        );
        assert_eq!(
            f(
                "application/json;q=0.5, application/vnd.kubernetes.protobuf",
                false
            )
            .unwrap(),
            (Rendering::Full, Format::Protobuf)
        );
        assert_eq!(
            f("application/vnd.kubernetes.protobuf;stream=watch", false).unwrap(),
            (Rendering::Full, Format::Protobuf)
        );
        let e = f("application/vnd.kubernetes.protobuf", true).unwrap_err();
        assert_eq!((e.code, e.reason), (406, "NotAcceptable"));
        // the metadata client
        let metadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        for custom in [false, true] {
            assert_eq!(
                f(metadata, custom).unwrap(),
                (Rendering::Metadata, Format::Protobuf)
            );
        }
        // tables are JSON only
        let tables = "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json;as=Table;g=meta.k8s.io;v=v1";
        assert_eq!(f(tables, false).unwrap().1, Format::Json);
        assert_eq!(Format::for_accept("text/plain", false), Format::Json);
        assert_eq!(Format::for_accept("", false), Format::Json);
        assert_eq!(Format::for_accept(client_go, false), Format::Protobuf);
        assert_eq!(
            Format::Protobuf.content_type(true),
            "application/vnd.kubernetes.protobuf;stream=watch"
        );
    }

    #[test]
    fn clause_parsing() {
        let c = parse("text/html;level=1;q=0.2, */*;q=0.1, application/json");
        assert_eq!(c.len(), 3);
        assert_eq!((c[0].ty, c[0].subtype), ("application", "json"));
        assert_eq!(
            (c[1].ty, c[1].subtype, c[1].param("level")),
            ("text", "html", Some("1"))
        );
        assert_eq!((c[2].ty, c[2].subtype), ("*", "*"));
        assert!(parse("nonsense").is_empty());
        assert_eq!(parse("*")[0].subtype, "*");
    }
}

#[cfg(test)]
mod coverage {
    use crate::registry::catalog::Catalog;

    /// Every built-in kind is served in protobuf, as upstream, except those whose Go
    /// types live outside `k8s.io/api` and `kube-aggregator` (the tables' sources).
    #[test]
    fn builtin_kinds_have_protobuf() {
        let missing: Vec<String> = Catalog::builtin()
            .resources()
            .iter()
            .filter(|d| super::json_only(d))
            .map(|d| format!("{} {}", d.api_version(), d.kind))
            .collect();
        assert_eq!(
            missing,
            ["apiextensions.k8s.io/v1 CustomResourceDefinition"],
            "kinds without protobuf tables"
        );
    }
}
