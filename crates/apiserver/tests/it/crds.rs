//! CustomResourceDefinitions over HTTP with kube-rs: a CRD is established and served at
//! once (discovery, OpenAPI, CRUD, watch, tables, subresources), objects are validated,
//! defaulted and pruned by its schema, versions convert, and deleting the CRD deletes
//! its objects (waiting for their finalizers).

use crate::common;

use std::time::Duration;

use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams,
};
use kube::{Api, Client};
use serde_json::{json, Value};

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [
                {
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "required": ["size"], "properties": {
                                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                                "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                                "replicas": {"type": "integer"},
                                "selector": {"type": "string"}
                            }},
                            "status": {"type": "object", "properties": {
                                "ready": {"type": "boolean"},
                                "replicas": {"type": "integer"}
                            }}
                        }
                    }},
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".spec.selector"}},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                        {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                    ]
                },
                {
                    "name": "v1beta1", "served": true, "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
                }
            ]
        }
    })
}

fn crd_api(client: &Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    Api::all_with(client.clone(), &ar)
}

fn widgets(client: &Client, version: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", version, "Widget"),
        "widgets",
    );
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn obj(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("object")
}

async fn raw(client: &Client, method: &str, path: &str, accept: &str) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("accept", accept)
        .body(Vec::new())
        .expect("request");
    let resp = client.send(req.map(Into::into)).await.expect("send");
    let code = resp.status().as_u16();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    (code, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

async fn create_crd(client: &Client, crd: Value) -> Value {
    let created = crd_api(client)
        .create(&PostParams::default(), &obj(crd))
        .await
        .expect("create CRD");
    let name = created.metadata.name.clone().expect("name");
    let got = crd_api(client).get(&name).await.expect("get CRD");
    serde_json::to_value(got).expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_is_established_and_served() {
    let (running, client, _dir) = common::start_with_client().await;
    let crd = create_crd(&client, widget_crd()).await;
    let conds = crd["status"]["conditions"].as_array().expect("conditions");
    let cond = |t: &str| conds.iter().find(|c| c["type"] == t).cloned();
    assert_eq!(
        cond("NamesAccepted").expect("NamesAccepted")["status"],
        "True"
    );
    assert_eq!(
        cond("Established").expect("Established")["reason"],
        "InitialNamesAccepted"
    );
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    let managers: Vec<(String, String)> = crd["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .map(|m| {
            (
                m["manager"].as_str().unwrap_or("").to_string(),
                m["subresource"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(
        managers.contains(&("kube-apiserver".to_string(), "status".to_string())),
        "{managers:?}"
    );

    // discovery: legacy and aggregated
    let (code, list) = raw(&client, "GET", "/apis/example.com/v1", "application/json").await;
    assert_eq!(code, 200);
    let res = list["resources"].as_array().expect("resources");
    let w = res
        .iter()
        .find(|r| r["name"] == "widgets")
        .expect("widgets");
    assert_eq!(w["shortNames"], json!(["wd"]));
    assert_eq!(w["categories"], json!(["all"]));
    assert!(res.iter().any(|r| r["name"] == "widgets/status"));
    assert!(res.iter().any(|r| r["name"] == "widgets/scale"));
    let (_, group) = raw(&client, "GET", "/apis/example.com", "application/json").await;
    assert_eq!(group["preferredVersion"]["version"], "v1");
    let (_, agg) = raw(
        &client,
        "GET",
        "/apis",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    )
    .await;
    assert!(agg["items"]
        .as_array()
        .expect("items")
        .iter()
        .any(|g| g["metadata"]["name"] == "example.com"));
    // OpenAPI v3 document with the schema and a reference to ObjectMeta
    let (_, index) = raw(&client, "GET", "/openapi/v3", "application/json").await;
    let url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .expect("document listed")
        .to_string();
    let (code, doc) = raw(&client, "GET", &url, "application/json").await;
    assert_eq!(code, 200);
    let schema = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        schema["properties"]["spec"]["properties"]["size"]["maximum"],
        10
    );
    assert_eq!(
        schema["x-kubernetes-group-version-kind"][0]["kind"],
        "Widget"
    );
    assert!(doc["components"]["schemas"]
        .get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .is_some());

    // CRUD, defaulting, pruning
    let api = widgets(&client, "v1");
    let created = api
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3, "bogus": true}, "status": {"ready": true}})),
        )
        .await
        .expect("create widget");
    let v = serde_json::to_value(&created).expect("json");
    assert_eq!(v["spec"]["color"], "red", "defaulted: {v}");
    assert!(v["spec"].get("bogus").is_none(), "pruned: {v}");
    assert!(v.get("status").is_none(), "status dropped on create: {v}");
    assert_eq!(v["metadata"]["generation"], 1);
    // served in the other version, stored once
    let beta = widgets(&client, "v1beta1")
        .get("w1")
        .await
        .expect("get v1beta1");
    assert_eq!(
        beta.types.as_ref().map(|t| t.api_version.as_str()),
        Some("example.com/v1beta1")
    );
    // status subresource
    let st = api
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true, "replicas": 2}})),
        )
        .await
        .expect("status patch");
    assert_eq!(st.data["status"]["ready"], true);
    assert_eq!(st.metadata.generation, Some(1));
    // scale subresource
    let (code, scale) = raw(
        &client,
        "GET",
        "/apis/example.com/v1/namespaces/default/widgets/w1/scale",
        "application/json",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(scale["status"]["replicas"], 2);
    let scaled = api
        .patch_scale(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("scale");
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(5));
    let w = api.get("w1").await.expect("get");
    assert_eq!(w.data["spec"]["replicas"], 5);
    assert_eq!(w.metadata.generation, Some(2));

    // table with the printer columns
    let (_, table) = raw(
        &client,
        "GET",
        "/apis/example.com/v1/namespaces/default/widgets",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    )
    .await;
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["Name", "Size", "Color", "Ready", "Age"]);
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[0], "w1");
    assert_eq!(cells[1], 3);
    assert_eq!(cells[2], "red");
    assert_eq!(cells[3], true);

    // list and watch see it
    let list = api.list(&ListParams::default()).await.expect("list");
    assert_eq!(list.items.len(), 1);

    running.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_crd_deletes_its_objects() {
    let (running, client, _dir) = common::start_with_client().await;
    create_crd(&client, widget_crd()).await;
    let api = widgets(&client, "v1");
    for (name, finalizers) in [("a", json!([])), ("b", json!(["example.com/hold"]))] {
        api.create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "finalizers": finalizers}, "spec": {"size": 1}})),
        )
        .await
        .expect("create");
    }
    crd_api(&client)
        .delete("widgets.example.com", &DeleteParams::default())
        .await
        .expect("delete CRD");
    // terminating: creates refused, the held object waits for its finalizer
    let mut refused = None;
    for _ in 0..100 {
        match api
            .create(
                &PostParams::default(),
                &obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "late"}, "spec": {"size": 1}})),
            )
            .await
        {
            Err(kube::Error::Api(e)) => {
                refused = Some(e);
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let e = refused.expect("create refused while terminating");
    assert_eq!(e.code, 405);
    assert!(e.message.contains("terminating"), "{}", e.message);
    let mut held = None;
    for _ in 0..100 {
        if let Ok(b) = api.get("b").await {
            if b.metadata.deletion_timestamp.is_some() {
                held = Some(b);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(held.is_some(), "b is being deleted");
    assert!(api.get("a").await.is_err(), "a is gone");
    let crd = crd_api(&client)
        .get("widgets.example.com")
        .await
        .expect("CRD still there");
    let v = serde_json::to_value(&crd).expect("json");
    assert!(v["metadata"]["finalizers"]
        .as_array()
        .expect("finalizers")
        .iter()
        .any(|f| f == "customresourcecleanup.apiextensions.k8s.io"));
    // release the finalizer: the object and then the CRD disappear
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release");
    let mut gone = false;
    for _ in 0..100 {
        if crd_api(&client).get("widgets.example.com").await.is_err() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "CRD removed after its objects");
    let (code, _) = raw(
        &client,
        "GET",
        "/apis/example.com/v1/widgets",
        "application/json",
    )
    .await;
    assert_eq!(code, 404);
    running.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cel_validation_rules_are_enforced() {
    let (running, client, _dir) = common::start_with_client().await;
    let mut crd = widget_crd();
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    spec["properties"]["minSize"] = json!({"type": "integer"});
    spec["properties"]["owner"] = json!({"type": "string", "x-kubernetes-validations": [
        {"rule": "self == oldSelf", "message": "owner is immutable"}]});
    spec["x-kubernetes-validations"] = json!([
        {"rule": "!has(self.minSize) || self.minSize <= self.size", "message": "minSize must not exceed size", "fieldPath": ".minSize"}
    ]);
    create_crd(&client, crd).await;
    let api = widgets(&client, "v1");
    let bad = api
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "c"}, "spec": {"size": 2, "minSize": 5}})),
        )
        .await
        .expect_err("rule fails");
    let kube::Error::Api(e) = bad else {
        panic!("{bad:?}")
    };
    assert_eq!(e.code, 422);
    assert!(
        e.message
            .contains("spec.minSize: Invalid value: minSize must not exceed size"),
        "{}",
        e.message
    );
    api.create(
        &PostParams::default(),
        &obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "c"}, "spec": {"size": 2, "minSize": 1, "owner": "me"}})),
    )
    .await
    .expect("valid");
    let err = api
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"owner": "you"}})),
        )
        .await
        .expect_err("transition rule");
    let kube::Error::Api(e) = err else {
        panic!("{err:?}")
    };
    assert!(
        e.message
            .contains("spec.owner: Invalid value: \"you\": owner is immutable"),
        "{}",
        e.message
    );
    // a type error blocks the rules (upstream hasBlockingErr); the scale path's accessor
    // error is reported as upstream words it
    let err = api
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"owner": "you", "replicas": "two"}})),
        )
        .await
        .expect_err("type error");
    let kube::Error::Api(e) = err else {
        panic!("{err:?}")
    };
    assert_eq!(
        e.message,
        "Widget.example.com \"c\" is invalid: [\
         spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\", \
         .spec.replicas: Invalid value: 0: .spec.replicas accessor error: two is of the type string, expected int64, \
         <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; \
         correct the existing errors to complete validation]"
    );
    // a rule that does not compile makes the CRD invalid
    let mut broken = widget_crd();
    broken["metadata"]["name"] = json!("gadgets.example.com");
    broken["spec"]["names"] = json!({"plural": "gadgets", "kind": "Gadget"});
    broken["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["x-kubernetes-validations"] = json!([{"rule": "self.nope > 1"}]);
    let err = crd_api(&client)
        .create(&PostParams::default(), &obj(broken))
        .await
        .expect_err("uncompilable rule");
    let kube::Error::Api(e) = err else {
        panic!("{err:?}")
    };
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains("x-kubernetes-validations[0].rule"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("undefined field 'nope'"),
        "{}",
        e.message
    );
    running.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectable_fields_filter_lists_and_others_are_refused() {
    let (running, client, _dir) = common::start_with_client().await;
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.color"}]);
    create_crd(&client, crd).await;
    let api = widgets(&client, "v1");
    for (name, color) in [("r", "red"), ("b", "blue")] {
        api.create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": 1, "color": color}})),
        )
        .await
        .expect("create");
    }
    let blue = api
        .list(&ListParams::default().fields("spec.color=blue"))
        .await
        .expect("list");
    let names: Vec<String> = blue
        .items
        .iter()
        .filter_map(|i| i.metadata.name.clone())
        .collect();
    assert_eq!(names, ["b"]);
    let err = api
        .list(&ListParams::default().fields("spec.size=1"))
        .await
        .expect_err("not selectable");
    let kube::Error::Api(e) = err else {
        panic!("{err:?}")
    };
    assert_eq!(e.code, 400);
    assert!(e.message.contains("spec.size"), "{}", e.message);
    running.shutdown.cancel();
}

/// CRDValidationRatcheting: after a CRD's schema is tightened, objects stored under
/// the old schema can still be updated as long as the now-invalid values stay as they
/// are; changing such a value is checked against the new schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tightened_schemas_ratchet_unchanged_values() {
    let (running, client, _dir) = common::start_with_client().await;
    create_crd(&client, widget_crd()).await;
    let api = widgets(&client, "v1");
    api.create(
        &PostParams::default(),
        &obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "big"}, "spec": {"size": 8}})),
    )
    .await
    .expect("valid under the first schema");
    // the maximum drops from 10 to 5
    let tighten = json!({"spec": {"versions": [
        {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 5},
                "color": {"type": "string", "enum": ["red", "blue"], "default": "red"}}}}}}},
        {"name": "v1beta1", "served": true, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
    ]}});
    crd_api(&client)
        .patch(
            "widgets.example.com",
            &PatchParams::default(),
            &Patch::Merge(tighten),
        )
        .await
        .expect("tighten the schema");
    // the catalogue is rebuilt after the CRD write; wait until the new schema applies
    let mut rejected = None;
    for _ in 0..50 {
        match api
            .create(
                &PostParams::default(),
                &obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "probe"}, "spec": {"size": 8}})),
            )
            .await
        {
            Err(kube::Error::Api(e)) => {
                rejected = Some(e);
                break;
            }
            Ok(_) => {
                let _ = api.delete("probe", &DeleteParams::default()).await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(rejected.expect("new objects are checked").code, 422);
    // an unrelated change keeps the stored size as it is: accepted
    api.patch(
        "big",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"color": "blue"}})),
    )
    .await
    .expect("the unchanged size is ratcheted");
    // changing the size checks it against the new maximum
    let err = api
        .patch(
            "big",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 7}})),
        )
        .await
        .expect_err("a changed size is checked");
    let kube::Error::Api(e) = err else {
        panic!("{err:?}")
    };
    assert!(
        e.message.contains(
            "spec.size: Invalid value: 7: spec.size in body should be less than or equal to 5"
        ),
        "{}",
        e.message
    );
    running.shutdown.cancel();
}

/// Every request to a deprecated version of a custom resource carries a `Warning`
/// header: the CRD's `deprecationWarning`, or upstream's default text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deprecated_versions_warn() {
    let (_running, client, _dir) = common::start_with_client().await;
    let mut crd = widget_crd();
    crd["spec"]["versions"][1]["deprecated"] = json!(true);
    create_crd(&client, crd).await;
    let warnings = |path: &'static str| {
        let client = client.clone();
        async move {
            let req = http::Request::builder()
                .method("GET")
                .uri(path)
                .body(Vec::new())
                .expect("request");
            let resp = client.send(req.map(Into::into)).await.expect("send");
            assert_eq!(resp.status().as_u16(), 200, "{path}");
            resp.headers()
                .get_all("warning")
                .iter()
                .map(|v| v.to_str().expect("ascii").to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        warnings("/apis/example.com/v1beta1/namespaces/default/widgets").await,
        vec!["299 - \"example.com/v1beta1 Widget is deprecated\"".to_string()]
    );
    assert!(warnings("/apis/example.com/v1/namespaces/default/widgets")
        .await
        .is_empty());
    let mut custom = widget_crd();
    custom["metadata"]["name"] = json!("gadgets.example.com");
    custom["spec"]["names"] = json!({"plural": "gadgets", "singular": "gadget", "kind": "Gadget"});
    custom["spec"]["versions"][1]["deprecated"] = json!(true);
    custom["spec"]["versions"][1]["deprecationWarning"] = json!("use example.com/v1 Gadget");
    create_crd(&client, custom).await;
    assert_eq!(
        warnings("/apis/example.com/v1beta1/gadgets").await,
        vec!["299 - \"use example.com/v1 Gadget\"".to_string()]
    );
}
