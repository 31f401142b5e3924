//! Matching claims to volumes: the access-mode index of the binder's volume cache
//! (upstream `index.go`) and the matching rules of `component-helpers/storage/volume`
//! (`FindMatchingVolume`, `CheckVolumeModeMismatches`, `CheckAccessModes`, class and
//! binding helpers).
//!
//! Volumes are grouped by their set of access modes. A claim looks at every group whose
//! set holds all the modes it asks for, the smallest sets first, and takes the first
//! group that yields a volume: so a `ReadWriteOnce` volume is preferred to a
//! `ReadWriteOnce,ReadOnlyMany,ReadWriteMany` one of any size. Within a group a volume
//! pre-bound to the claim (its `claimRef`) wins at once; otherwise the smallest
//! `Available` volume of the claim's class, big enough, with the claim's volume mode and
//! matching its selector wins.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use apimachinery::quantity;
use apimachinery::selector::LabelSelector;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::{ANN_BETA_STORAGE_CLASS, ANN_SELECTED_NODE};

/// The access modes in upstream's display order, with their abbreviations.
const MODES: [(&str, &str); 4] = [
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
];

/// Upstream `GetAccessModesAsString`: the distinct modes as `RWO,ROX,RWX,RWOP` (that
/// order; unknown modes are left out).
pub fn access_modes_as_string(modes: &[String]) -> String {
    MODES
        .iter()
        .filter(|(m, _)| modes.iter().any(|x| x == m))
        .map(|(_, a)| *a)
        .collect::<Vec<_>>()
        .join(",")
}

/// Upstream `GetAccessModesFromString`: the inverse of [`access_modes_as_string`].
pub fn access_modes_from_string(s: &str) -> Vec<String> {
    s.split(',')
        .filter_map(|a| MODES.iter().find(|(_, x)| *x == a.trim()))
        .map(|(m, _)| m.to_string())
        .collect()
}

fn claim_modes(claim: &PersistentVolumeClaim) -> &[String] {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default()
}

fn volume_modes(volume: &PersistentVolume) -> &[String] {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default()
}

/// Parse a storage quantity; a missing one is zero; a malformed one is an error.
fn storage(list: Option<&BTreeMap<String, Quantity>>) -> Result<i128, String> {
    match list.and_then(|l| l.get("storage")) {
        None => Ok(0),
        Some(q) => quantity::parse(&q.0)
            .map(|q| q.nanos())
            .ok_or_else(|| format!("quantities must match the regular expression: {:?}", q.0)),
    }
}

/// The storage a claim requests (`spec.resources.requests.storage`, 0 when absent), in
/// units of 10^-9.
pub fn requested_storage(claim: &PersistentVolumeClaim) -> Result<i128, String> {
    storage(
        claim
            .spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref()),
    )
}

/// The capacity of a volume (`spec.capacity.storage`, 0 when absent), in units of 10^-9.
pub fn volume_capacity(volume: &PersistentVolume) -> Result<i128, String> {
    storage(volume.spec.as_ref().and_then(|s| s.capacity.as_ref()))
}

/// Upstream `GetPersistentVolumeClaimClass`: the beta annotation, else
/// `spec.storageClassName`, else `""`.
pub fn claim_class(claim: &PersistentVolumeClaim) -> String {
    if let Some(c) = claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANN_BETA_STORAGE_CLASS))
    {
        return c.clone();
    }
    claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.clone())
        .unwrap_or_default()
}

/// Upstream `PersistentVolumeClaimHasClass`: the beta annotation or
/// `spec.storageClassName` (even `""`) is set.
pub fn claim_has_class(claim: &PersistentVolumeClaim) -> bool {
    claim
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(ANN_BETA_STORAGE_CLASS))
        || claim
            .spec
            .as_ref()
            .is_some_and(|s| s.storage_class_name.is_some())
}

/// Upstream `GetPersistentVolumeClass`: the beta annotation, else
/// `spec.storageClassName`, else `""`.
pub fn volume_class(volume: &PersistentVolume) -> String {
    if let Some(c) = volume
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANN_BETA_STORAGE_CLASS))
    {
        return c.clone();
    }
    volume
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.clone())
        .unwrap_or_default()
}

/// Upstream `IsVolumeBoundToClaim`: the volume's `claimRef` names the claim (and its UID,
/// when the reference has one).
pub fn is_volume_bound_to_claim(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(r) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    if r.name.as_deref().unwrap_or_default() != claim.metadata.name.as_deref().unwrap_or_default()
        || r.namespace.as_deref().unwrap_or_default()
            != claim.metadata.namespace.as_deref().unwrap_or_default()
    {
        return false;
    }
    match r.uid.as_deref() {
        None | Some("") => true,
        Some(uid) => Some(uid) == claim.metadata.uid.as_deref(),
    }
}

/// Upstream `CheckVolumeModeMismatches`: whether the claim's and the volume's
/// `volumeMode` differ (unset means `Filesystem` on both sides).
pub fn volume_mode_mismatch(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let c = claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    let v = volume
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    c != v
}

/// Upstream `CheckAccessModes`: the volume offers every mode the claim asks for.
pub fn check_access_modes(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let offered = volume_modes(volume);
    claim_modes(claim).iter().all(|m| offered.contains(m))
}

/// Upstream `CheckNodeAffinity`: the volume's required node affinity admits a node with
/// these labels (no affinity admits every node).
pub fn check_node_affinity(volume: &PersistentVolume, node: &Node) -> Result<(), String> {
    let Some(required) = volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
    else {
        return Ok(());
    };
    // only the labels count, as upstream builds a node from them alone
    let labelled = Node {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            labels: node.metadata.labels.clone(),
            ..Default::default()
        },
        ..Default::default()
    };
    if required
        .node_selector_terms
        .iter()
        .any(|t| crate::daemon::util::term_matches(t, &labelled) == Some(true))
    {
        Ok(())
    } else {
        Err("no matching NodeSelectorTerms".into())
    }
}

/// Upstream `checkVolumeSatisfyClaim`: why a volume the user named in
/// `spec.volumeName` cannot serve the claim (`Ok` when it can). Neither the selector
/// nor the volume's phase is checked on this path.
pub fn check_volume_satisfy_claim(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> Result<(), String> {
    let name = volume.metadata.name.as_deref().unwrap_or_default();
    if volume.metadata.deletion_timestamp.is_some() {
        return Err(format!("the volume is marked for deletion {name:?}"));
    }
    // upstream compares Value()s: whole units, rounded up
    let units =
        |n: i128| n.div_euclid(1_000_000_000) + i128::from(n.rem_euclid(1_000_000_000) != 0);
    if units(volume_capacity(volume)?) < units(requested_storage(claim)?) {
        return Err("requested PV is too small".into());
    }
    if volume_class(volume) != claim_class(claim) {
        return Err("storageClassName does not match".into());
    }
    if volume_mode_mismatch(claim, volume) {
        return Err("incompatible volumeMode".into());
    }
    if !check_access_modes(claim, volume) {
        return Err("incompatible accessMode".into());
    }
    Ok(())
}

fn phase(volume: &PersistentVolume) -> &str {
    volume
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// Upstream `FindMatchingVolume`: the best of `volumes` for `claim`.
///
/// `node` is the scheduler's path (node affinity and access modes are checked, a
/// volume in `excluded` is skipped); the binder passes `None`. With `delay_binding`
/// (a `WaitForFirstConsumer` class) and no node, only a volume pre-bound to the claim
/// can match. An invalid claim selector is an error.
pub fn find_matching_volume<'a>(
    claim: &PersistentVolumeClaim,
    volumes: impl IntoIterator<Item = &'a PersistentVolume>,
    node: Option<&Node>,
    excluded: &HashSet<String>,
    delay_binding: bool,
) -> Result<Option<&'a PersistentVolume>, String> {
    let requested = requested_storage(claim)?;
    let requested_class = claim_class(claim);
    let selector = match claim.spec.as_ref().and_then(|s| s.selector.as_ref()) {
        None => None,
        Some(s) => Some(
            LabelSelector::from_meta(s)
                .map_err(|e| format!("error creating internal label selector for claim: {e}"))?,
        ),
    };
    let mut smallest: Option<(&PersistentVolume, i128)> = None;
    for volume in volumes {
        let name = volume.metadata.name.as_deref().unwrap_or_default();
        if excluded.contains(name) {
            continue;
        }
        let claim_ref = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        let bound_to_claim = is_volume_bound_to_claim(volume, claim);
        if claim_ref.is_some() && !bound_to_claim {
            continue;
        }
        let capacity = volume_capacity(volume)?;
        if capacity < requested {
            continue;
        }
        if volume_mode_mismatch(claim, volume) {
            continue;
        }
        if volume.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let affinity_ok = node.is_none_or(|n| check_node_affinity(volume, n).is_ok());
        if bound_to_claim {
            // a pre-bound volume wins at once, unless the node cannot reach it
            return Ok(affinity_ok.then_some(volume));
        }
        if node.is_none() && delay_binding {
            // the scheduler binds volumes of WaitForFirstConsumer classes
            continue;
        }
        if phase(volume) != "Available" {
            continue;
        }
        if let Some(sel) = &selector {
            let empty = BTreeMap::new();
            if !sel.matches_labels(volume.metadata.labels.as_ref().unwrap_or(&empty)) {
                continue;
            }
        }
        if volume_class(volume) != requested_class {
            continue;
        }
        if !affinity_ok {
            continue;
        }
        if node.is_some() && !check_access_modes(claim, volume) {
            continue;
        }
        if smallest.is_none_or(|(_, c)| c > capacity) {
            smallest = Some((volume, capacity));
        }
    }
    Ok(smallest.map(|(v, _)| v))
}

/// Upstream `IsDelayBindingProvisioning`: the scheduler chose a node for the claim.
pub fn is_delay_binding_provisioning(claim: &PersistentVolumeClaim) -> bool {
    claim
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(ANN_SELECTED_NODE))
}

/// The binder's volume cache, indexed by access modes (upstream
/// `persistentVolumeOrderedIndex`) and by the claim a volume's `claimRef` names, so
/// that matching a claim looks only at unclaimed volumes and at those naming it (the
/// others never match), not at every bound volume.
#[derive(Debug, Default)]
pub struct VolumeIndex {
    /// access-mode string → volume name → volume
    by_modes: BTreeMap<String, BTreeMap<String, Arc<PersistentVolume>>>,
    /// access-mode string → volume name → volume, for volumes without a claimRef
    unclaimed: BTreeMap<String, BTreeMap<String, Arc<PersistentVolume>>>,
    /// `namespace/name` of a claimRef → the volumes naming it
    by_claim: HashMap<String, BTreeSet<String>>,
    /// volume name → its access-mode string
    modes_of: BTreeMap<String, String>,
}

fn claim_ref_key(volume: &PersistentVolume) -> Option<String> {
    let r = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref())?;
    Some(format!(
        "{}/{}",
        r.namespace.as_deref().unwrap_or_default(),
        r.name.as_deref().unwrap_or_default()
    ))
}

impl VolumeIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add or replace a volume.
    pub fn add(&mut self, volume: Arc<PersistentVolume>) {
        let name = volume.metadata.name.clone().unwrap_or_default();
        self.remove(&name);
        let modes = access_modes_as_string(volume_modes(&volume));
        match claim_ref_key(&volume) {
            Some(key) => {
                self.by_claim.entry(key).or_default().insert(name.clone());
            }
            None => {
                self.unclaimed
                    .entry(modes.clone())
                    .or_default()
                    .insert(name.clone(), volume.clone());
            }
        }
        self.by_modes
            .entry(modes.clone())
            .or_default()
            .insert(name.clone(), volume);
        self.modes_of.insert(name, modes);
    }

    /// Remove a volume by name.
    pub fn remove(&mut self, name: &str) -> Option<Arc<PersistentVolume>> {
        let modes = self.modes_of.remove(name)?;
        if let Some(group) = self.unclaimed.get_mut(&modes) {
            group.remove(name);
            if group.is_empty() {
                self.unclaimed.remove(&modes);
            }
        }
        let group = self.by_modes.get_mut(&modes)?;
        let old = group.remove(name);
        if group.is_empty() {
            self.by_modes.remove(&modes);
        }
        if let Some(key) = old.as_deref().and_then(claim_ref_key) {
            if let Some(names) = self.by_claim.get_mut(&key) {
                names.remove(name);
                if names.is_empty() {
                    self.by_claim.remove(&key);
                }
            }
        }
        old
    }

    /// A volume by name.
    pub fn get(&self, name: &str) -> Option<&Arc<PersistentVolume>> {
        let modes = self.modes_of.get(name)?;
        self.by_modes.get(modes)?.get(name)
    }

    /// Every volume, by access-mode group then name.
    pub fn list(&self) -> Vec<Arc<PersistentVolume>> {
        self.by_modes
            .values()
            .flat_map(|g| g.values().cloned())
            .collect()
    }

    /// How many volumes the index holds.
    pub fn len(&self) -> usize {
        self.modes_of.len()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.modes_of.is_empty()
    }

    /// Upstream `listByAccessModes`: the volumes whose access-mode set is exactly
    /// `modes`.
    pub fn list_by_access_modes(&self, modes: &[String]) -> Vec<Arc<PersistentVolume>> {
        self.by_modes
            .get(&access_modes_as_string(modes))
            .map(|g| g.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Upstream `allPossibleMatchingAccessModes`: every indexed access-mode set holding
    /// all of `requested`, the smallest sets first.
    pub fn all_possible_matching_access_modes(&self, requested: &[String]) -> Vec<Vec<String>> {
        let requested: BTreeSet<&String> = requested.iter().collect();
        let mut sets: Vec<Vec<String>> = self
            .by_modes
            .keys()
            .map(|k| access_modes_from_string(k))
            .filter(|set| requested.iter().all(|m| set.contains(m)))
            .collect();
        sets.sort_by_key(Vec::len);
        sets
    }

    /// Upstream `findByClaim` / `findBestMatchForClaim`: the best volume for `claim`,
    /// trying the access-mode groups from the smallest.
    pub fn find_best_match_for_claim(
        &self,
        claim: &PersistentVolumeClaim,
        delay_binding: bool,
    ) -> Result<Option<Arc<PersistentVolume>>, String> {
        let none = HashSet::new();
        let key = format!(
            "{}/{}",
            claim.metadata.namespace.as_deref().unwrap_or_default(),
            claim.metadata.name.as_deref().unwrap_or_default()
        );
        let naming = self.by_claim.get(&key);
        let empty = BTreeMap::new();
        for modes in self.all_possible_matching_access_modes(claim_modes(claim)) {
            let set = access_modes_as_string(&modes);
            let Some(group) = self.by_modes.get(&set) else {
                continue;
            };
            // volumes naming other claims never match: only those naming this claim
            // (one that fits wins at once) and the unclaimed ones are looked at
            let pre_bound = naming
                .into_iter()
                .flatten()
                .filter_map(|n| group.get(n))
                .map(|v| &**v);
            let unclaimed = self
                .unclaimed
                .get(&set)
                .unwrap_or(&empty)
                .values()
                .map(|v| &**v);
            if let Some(v) = find_matching_volume(
                claim,
                pre_bound.chain(unclaimed),
                None,
                &none,
                delay_binding,
            )? {
                let name = v.metadata.name.as_deref().unwrap_or_default();
                return Ok(group.get(name).cloned());
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
