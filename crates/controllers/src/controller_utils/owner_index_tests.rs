//! The index lookups against the namespace scans they replace, on real informer stores
//! (fed by a hand-driven watch, so the indexes are kept up by the informer's own code)
//! in both storage modes and without indexes (the fallback): a table of the cases
//! claiming distinguishes, then a seeded random history of pods and ReplicaSets,
//! compared after every step.

use std::collections::{BTreeMap, HashMap};

use coxswain_runtime::cache::{IndexFn, Storage};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::controller_utils::ref_manager::{claim_action, ClaimAction, ControllerIdentity};
use crate::controller_utils::store_feed::Feed;
use crate::controller_utils::{filter_active_pods, filter_terminating_pods};

fn pod_indexes() -> Vec<(&'static str, IndexFn<Pod>)> {
    vec![
        (CONTROLLER_UID_INDEX, Arc::new(controller_uid_index::<Pod>)),
        (POD_TEMPLATE_HASH_INDEX, Arc::new(pod_template_hash_index)),
    ]
}

fn rs_indexes() -> Vec<(&'static str, IndexFn<ReplicaSet>)> {
    vec![(
        CONTROLLER_UID_INDEX,
        Arc::new(controller_uid_index::<ReplicaSet>),
    )]
}

/// The store set-ups every check runs in: both storage modes with the indexes, and
/// one without (the lookups fall back to the scan).
const MODES: [(Storage, bool); 3] = [
    (Storage::Compact, true),
    (Storage::Decoded, true),
    (Storage::Compact, false),
];

// ---------------------------------------------------------------------------------------
// objects

fn labels(l: &[(&str, &str)]) -> BTreeMap<String, String> {
    l.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn owner(kind: &str, uid: &str, controller: bool) -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: kind.into(),
        name: format!("owner-{uid}"),
        uid: uid.into(),
        controller: Some(controller),
        block_owner_deletion: Some(true),
    }
}

fn meta(ns: &str, name: &str, l: &[(&str, &str)], refs: Vec<OwnerReference>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(ns.into()),
        uid: Some(format!("uid-{ns}-{name}")),
        labels: (!l.is_empty()).then(|| labels(l)),
        owner_references: (!refs.is_empty()).then_some(refs),
        ..Default::default()
    }
}

fn pod(ns: &str, name: &str, l: &[(&str, &str)], refs: Vec<OwnerReference>) -> Pod {
    Pod {
        metadata: meta(ns, name, l, refs),
        ..Default::default()
    }
}

fn selector(l: &[(&str, &str)]) -> LabelSelector {
    LabelSelector::from_match_labels(l.iter().copied())
}

/// A claiming controller: identity and selector.
struct Claimer {
    who: ControllerIdentity,
    selector: LabelSelector,
}

impl Claimer {
    fn new(ns: &str, uid: &str, sel: LabelSelector, deleting: bool) -> Self {
        Claimer {
            who: ControllerIdentity {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: format!("owner-{uid}"),
                namespace: ns.into(),
                uid: uid.into(),
                deleting,
            },
            selector: sel,
        }
    }

    fn selects(&self, meta: &ObjectMeta) -> bool {
        let empty = BTreeMap::new();
        self.selector
            .matches_labels(meta.labels.as_ref().unwrap_or(&empty))
    }

    /// What claiming `objects` does, in order, leaving out what it ignores.
    fn plan<K: Resource>(&self, objects: &[Arc<K>]) -> Vec<(String, ClaimAction)> {
        objects
            .iter()
            .map(|o| {
                let action = claim_action(&self.who, o.meta(), self.selects(o.meta()));
                (name_of(o.as_ref()).to_string(), action)
            })
            .filter(|(_, a)| *a != ClaimAction::Ignore)
            .collect()
    }
}

/// Names and resourceVersions: the same objects in the same versions and order.
fn ids<K: Resource>(objects: &[Arc<K>]) -> Vec<(String, String)> {
    objects
        .iter()
        .map(|o| {
            (
                name_of(o.as_ref()).to_string(),
                o.meta().resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn map_ids(map: &HashMap<String, Vec<Arc<Pod>>>) -> BTreeMap<String, Vec<(String, String)>> {
    map.iter().map(|(k, v)| (k.clone(), ids(v))).collect()
}

/// Every pod lookup against its scan, for `claimer`; returns the claim plan.
fn check_pods(store: &Store<Pod>, c: &Claimer, ctx: &str) -> Vec<(String, ClaimAction)> {
    let (ns, uid) = (c.who.namespace.as_str(), c.who.uid.as_str());
    let scan = store.list_namespace(ns);
    let looked_up = claimable_pods(store, ns, uid, Some(&c.selector));
    let plan = c.plan(&scan);
    assert_eq!(
        c.plan(&looked_up),
        plan,
        "{ctx}: claim plan of {uid} {}",
        c.selector
    );
    // what the ReplicaSet sync claims (its active pods) and counts as terminating
    assert_eq!(
        c.plan(&filter_active_pods(&looked_up)),
        c.plan(&filter_active_pods(&scan)),
        "{ctx}: claim plan, active pods"
    );
    let terminating = |pods: &[Arc<Pod>]| {
        ids(&filter_terminating_pods(pods)
            .into_iter()
            .filter(|p| c.who.controls(&p.metadata) && c.selects(&p.metadata))
            .collect::<Vec<_>>())
    };
    assert_eq!(
        terminating(&looked_up),
        terminating(&scan),
        "{ctx}: terminating"
    );
    assert_eq!(
        ids(&claimable(store, ns, uid)),
        ids(&claimable_by_scan(store, ns, uid)),
        "{ctx}: claimable of {uid}"
    );
    assert_eq!(
        ids(&controlled_by(store, ns, uid)),
        ids(&controlled_by_scan(store, ns, uid)),
        "{ctx}: controlled by {uid}"
    );
    assert_eq!(
        ids(&pods_selected(store, ns, &c.selector)),
        ids(&pods_selected_by_scan(store, ns, &c.selector)),
        "{ctx}: selected by {}",
        c.selector
    );
    plan
}

// ---------------------------------------------------------------------------------------
// the table

const WEB: &str = "uid-web";
const OTHER: &str = "uid-other";

/// One step of a case: a change, then the claim plan the ReplicaSet `WEB` (selector
/// `app=web,pod-template-hash=h1`) must see, by index and by scan alike.
enum Step {
    Put(Pod),
    Delete(Pod),
}

fn ctrl(uid: &str) -> OwnerReference {
    owner("ReplicaSet", uid, true)
}

fn web(name: &str, refs: Vec<OwnerReference>) -> Pod {
    pod(
        "ns",
        name,
        &[("app", "web"), (POD_TEMPLATE_HASH_LABEL, "h1")],
        refs,
    )
}

fn deleting(mut p: Pod) -> Pod {
    p.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
    p
}

#[allow(clippy::type_complexity)]
fn table() -> Vec<(&'static str, Vec<(Step, Vec<(&'static str, ClaimAction)>)>)> {
    use ClaimAction::{Adopt, Keep, Release};
    use Step::{Delete, Put};
    vec![
        (
            "owned and matching: kept",
            vec![(Put(web("a", vec![ctrl(WEB)])), vec![("a", Keep)])],
        ),
        (
            "orphan matching: adopted",
            vec![(Put(web("a", vec![])), vec![("a", Adopt)])],
        ),
        (
            "orphan not matching: left alone",
            vec![
                (Put(pod("ns", "a", &[("app", "db")], vec![])), vec![]),
                (
                    Put(pod(
                        "ns",
                        "b",
                        &[("app", "web"), (POD_TEMPLATE_HASH_LABEL, "h2")],
                        vec![],
                    )),
                    vec![],
                ),
                (Put(pod("ns", "c", &[("app", "web")], vec![])), vec![]),
            ],
        ),
        (
            "owned by another controller, matching: ignored",
            vec![(Put(web("a", vec![ctrl(OTHER)])), vec![])],
        ),
        (
            "controlled by a deleted namesake (same name, other UID): ignored",
            vec![(
                Put(web(
                    "a",
                    vec![OwnerReference {
                        name: format!("owner-{WEB}"),
                        ..ctrl("uid-web-before")
                    }],
                )),
                vec![],
            )],
        ),
        (
            "non-controller owner references only: an orphan",
            vec![(
                Put(web(
                    "a",
                    vec![owner("ReplicaSet", WEB, false), owner("Job", OTHER, false)],
                )),
                vec![("a", Adopt)],
            )],
        ),
        (
            "a non-controller reference to us beside another controller: ignored",
            vec![(
                Put(web("a", vec![owner("ReplicaSet", WEB, false), ctrl(OTHER)])),
                vec![],
            )],
        ),
        (
            "an orphan being deleted is not adopted",
            vec![(Put(deleting(web("a", vec![]))), vec![])],
        ),
        (
            "an owned pod being deleted is still kept",
            vec![(Put(deleting(web("a", vec![ctrl(WEB)]))), vec![("a", Keep)])],
        ),
        (
            "another namespace: not seen",
            vec![(
                Put(pod(
                    "other-ns",
                    "a",
                    &[("app", "web"), (POD_TEMPLATE_HASH_LABEL, "h1")],
                    vec![],
                )),
                vec![],
            )],
        ),
        (
            "adoption when an orphan appears, then adopted",
            vec![
                (Put(web("b", vec![ctrl(WEB)])), vec![("b", Keep)]),
                (Put(web("a", vec![])), vec![("a", Adopt), ("b", Keep)]),
                (
                    Put(web("a", vec![ctrl(WEB)])),
                    vec![("a", Keep), ("b", Keep)],
                ),
            ],
        ),
        (
            "release when labels change, then released",
            vec![
                (Put(web("a", vec![ctrl(WEB)])), vec![("a", Keep)]),
                (
                    Put(pod("ns", "a", &[("app", "other")], vec![ctrl(WEB)])),
                    vec![("a", Release)],
                ),
                (Put(pod("ns", "a", &[("app", "other")], vec![])), vec![]),
                // matching again: adopted again
                (Put(web("a", vec![])), vec![("a", Adopt)]),
            ],
        ),
        (
            "owner changes",
            vec![
                (Put(web("a", vec![ctrl(OTHER)])), vec![]),
                (Put(web("a", vec![ctrl(WEB)])), vec![("a", Keep)]),
                (Put(web("a", vec![ctrl(OTHER)])), vec![]),
            ],
        ),
        (
            "deletion",
            vec![
                (Put(web("a", vec![ctrl(WEB)])), vec![("a", Keep)]),
                (Put(web("b", vec![])), vec![("a", Keep), ("b", Adopt)]),
                (Delete(web("a", vec![ctrl(WEB)])), vec![("b", Adopt)]),
                (Delete(web("b", vec![])), vec![]),
            ],
        ),
    ]
}

#[tokio::test]
async fn index_lookups_match_the_scan_case_by_case() {
    for (storage, indexed) in MODES {
        for (name, steps) in table() {
            let ctx = format!("{name} ({storage:?}, indexed: {indexed})");
            let indexes = if indexed { pod_indexes() } else { Vec::new() };
            let mut feed = Feed::<Pod>::start(storage, indexes).await;
            // a pod of the other controller that never matters
            feed.put(&web("z-other", vec![ctrl(OTHER)])).await;
            let pinned = Claimer::new(
                "ns",
                WEB,
                selector(&[("app", "web"), (POD_TEMPLATE_HASH_LABEL, "h1")]),
                false,
            );
            let unpinned = Claimer::new("ns", WEB, selector(&[("app", "web")]), false);
            for (i, (step, want)) in steps.into_iter().enumerate() {
                match &step {
                    Step::Put(p) => feed.put(p).await,
                    Step::Delete(p) => feed.delete(p).await,
                }
                let ctx = format!("{ctx}, step {i}");
                let got = check_pods(feed.store(), &pinned, &ctx);
                let want: Vec<(String, ClaimAction)> =
                    want.into_iter().map(|(n, a)| (n.to_string(), a)).collect();
                assert_eq!(got, want, "{ctx}");
                check_pods(feed.store(), &unpinned, &ctx);
                // the same controller being deleted adopts and releases nothing
                let gone = Claimer::new("ns", WEB, pinned.selector.clone(), true);
                let plan = check_pods(feed.store(), &gone, &ctx);
                assert!(plan.iter().all(|(_, a)| *a == ClaimAction::Keep), "{ctx}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// random histories

const NAMESPACES: [&str; 2] = ["a", "b"];
/// Controller UIDs: live ReplicaSets, a deleted one, a Job.
const POD_OWNERS: [&str; 5] = ["rs-1", "rs-2", "rs-3", "rs-gone", "job-1"];
/// Deployment UIDs the ReplicaSets point to.
const RS_OWNERS: [&str; 3] = ["dep-1", "dep-2", "dep-gone"];

fn random_labels(rng: &mut StdRng) -> Vec<(&'static str, &'static str)> {
    let mut l = Vec::new();
    match rng.random_range(0..4) {
        0 => {}
        1 => l.push(("app", "web")),
        2 => l.push(("app", "db")),
        _ => l.push(("tier", "web")),
    }
    match rng.random_range(0..3) {
        0 => {}
        1 => l.push((POD_TEMPLATE_HASH_LABEL, "h1")),
        _ => l.push((POD_TEMPLATE_HASH_LABEL, "h2")),
    }
    l
}

fn random_refs(rng: &mut StdRng, kind: &str, owners: &[&str]) -> Vec<OwnerReference> {
    let mut refs = Vec::new();
    if rng.random_bool(0.2) {
        // a non-controller reference
        let uid = owners[rng.random_range(0..owners.len())];
        refs.push(owner(kind, uid, false));
    }
    if rng.random_bool(0.6) {
        let uid = owners[rng.random_range(0..owners.len())];
        refs.push(owner(kind, uid, true));
    }
    refs
}

fn random_meta(rng: &mut StdRng, ns: &str, name: &str, kind: &str, owners: &[&str]) -> ObjectMeta {
    let l = random_labels(rng);
    let refs = random_refs(rng, kind, owners);
    let mut m = meta(ns, name, &l, refs);
    if rng.random_bool(0.1) {
        m.deletion_timestamp = Some(Time(Timestamp::now()));
    }
    m
}

/// Change one thing of `m`: its labels, its controller (adoption, release, another
/// owner), its other references, or start its deletion.
fn mutate(rng: &mut StdRng, m: &mut ObjectMeta, kind: &str, owners: &[&str]) {
    match rng.random_range(0..5) {
        0 => {
            let l = random_labels(rng);
            m.labels = (!l.is_empty()).then(|| labels(&l));
        }
        1 => {
            // adopted by, or moved to, a random controller
            let uid = owners[rng.random_range(0..owners.len())];
            let refs = m.owner_references.get_or_insert_with(Vec::new);
            refs.retain(|r| r.controller != Some(true));
            refs.push(owner(kind, uid, true));
        }
        2 => {
            // released
            if let Some(refs) = m.owner_references.as_mut() {
                refs.retain(|r| r.controller != Some(true));
            }
        }
        3 => {
            m.owner_references = {
                let refs = random_refs(rng, kind, owners);
                (!refs.is_empty()).then_some(refs)
            }
        }
        _ => m.deletion_timestamp = Some(Time(Timestamp::now())),
    }
}

/// Add, change or delete a random object of `model`; returns the change to send.
fn random_step(
    rng: &mut StdRng,
    model: &mut BTreeMap<(String, String), ObjectMeta>,
    kind: &str,
    owners: &[&str],
) -> (ObjectMeta, bool) {
    let ns = NAMESPACES[rng.random_range(0..NAMESPACES.len())];
    let name = format!("o{}", rng.random_range(0..12));
    let key = (ns.to_string(), name.clone());
    match model.get(&key).cloned() {
        None => {
            let m = random_meta(rng, ns, &name, kind, owners);
            model.insert(key, m.clone());
            (m, false)
        }
        Some(m) if rng.random_bool(0.25) => {
            model.remove(&key);
            (m, true)
        }
        Some(mut m) => {
            mutate(rng, &mut m, kind, owners);
            model.insert(key, m.clone());
            (m, false)
        }
    }
}

fn pod_claimers() -> Vec<Claimer> {
    let selectors = [
        selector(&[("app", "web")]),
        selector(&[("app", "web"), (POD_TEMPLATE_HASH_LABEL, "h1")]),
        selector(&[(POD_TEMPLATE_HASH_LABEL, "h2")]),
        LabelSelector::parse("app in (web,db),pod-template-hash in (h1)").expect("valid"),
        LabelSelector::parse("pod-template-hash notin (h1)").expect("valid"),
        LabelSelector::everything(),
    ];
    let mut out = Vec::new();
    for ns in NAMESPACES {
        for uid in POD_OWNERS {
            for sel in &selectors {
                for deleting in [false, true] {
                    out.push(Claimer::new(ns, uid, sel.clone(), deleting));
                }
            }
        }
    }
    out
}

fn check_all_pods(store: &Store<Pod>, claimers: &[Claimer], ctx: &str) {
    for c in claimers {
        check_pods(store, c, ctx);
    }
    // a Deployment's pod map and its Recreate "pods left" count, for any set of
    // ReplicaSet UIDs
    for ns in NAMESPACES {
        for uids in [&POD_OWNERS[..], &POD_OWNERS[..2], &POD_OWNERS[3..]] {
            for sel in [selector(&[("app", "web")]), LabelSelector::everything()] {
                assert_eq!(
                    map_ids(&pods_by_controller(store, ns, uids.iter().copied(), &sel)),
                    map_ids(&pods_by_controller_scan(
                        store,
                        ns,
                        uids.iter().copied(),
                        &sel
                    )),
                    "{ctx}: pods of {uids:?} in {ns} by {sel}"
                );
            }
        }
    }
}

fn check_all_replica_sets(store: &Store<ReplicaSet>, ctx: &str) {
    for ns in NAMESPACES {
        for uid in RS_OWNERS {
            for deleting in [false, true] {
                let c = Claimer::new(ns, uid, selector(&[("app", "web")]), deleting);
                assert_eq!(
                    c.plan(&claimable(store, ns, uid)),
                    c.plan(&store.list_namespace(ns)),
                    "{ctx}: ReplicaSets claimed by {uid}"
                );
            }
            assert_eq!(
                ids(&claimable(store, ns, uid)),
                ids(&claimable_by_scan(store, ns, uid)),
                "{ctx}: claimable ReplicaSets of {uid}"
            );
            // siblings: the ReplicaSets of one Deployment
            assert_eq!(
                ids(&controlled_by(store, ns, uid)),
                ids(&controlled_by_scan(store, ns, uid)),
                "{ctx}: ReplicaSets of {uid}"
            );
        }
    }
}

const STEPS: usize = 400;

#[tokio::test]
async fn index_lookups_match_the_scan_through_a_random_history() {
    let seed: u64 = std::env::var("COXSWAIN_INDEX_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(22);
    let claimers = pod_claimers();
    for (storage, indexed) in MODES {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut pods =
            Feed::<Pod>::start(storage, if indexed { pod_indexes() } else { Vec::new() }).await;
        let mut sets =
            Feed::<ReplicaSet>::start(storage, if indexed { rs_indexes() } else { Vec::new() })
                .await;
        let (mut pod_model, mut rs_model) = (BTreeMap::new(), BTreeMap::new());
        let (mut adds, mut deletes) = (0, 0);
        for step in 0..STEPS {
            let ctx = format!("seed {seed}, step {step} ({storage:?}, indexed: {indexed})");
            if rng.random_bool(0.75) {
                let (m, deleted) = random_step(&mut rng, &mut pod_model, "ReplicaSet", &POD_OWNERS);
                let p = Pod {
                    metadata: m,
                    ..Default::default()
                };
                if deleted {
                    deletes += 1;
                    pods.delete(&p).await;
                } else {
                    adds += 1;
                    pods.put(&p).await;
                }
                assert_eq!(pods.store().len(), pod_model.len(), "{ctx}");
                check_all_pods(pods.store(), &claimers, &ctx);
            } else {
                let (m, deleted) = random_step(&mut rng, &mut rs_model, "Deployment", &RS_OWNERS);
                let rs = ReplicaSet {
                    metadata: m,
                    ..Default::default()
                };
                if deleted {
                    sets.delete(&rs).await;
                } else {
                    sets.put(&rs).await;
                }
                assert_eq!(sets.store().len(), rs_model.len(), "{ctx}");
                check_all_replica_sets(sets.store(), &ctx);
            }
        }
        // the history did exercise every kind of change
        assert!(
            adds > 100 && deletes > 20,
            "{adds} puts, {deletes} deletions"
        );
        assert!(pods.store().has_index(CONTROLLER_UID_INDEX) == indexed);
    }
}
