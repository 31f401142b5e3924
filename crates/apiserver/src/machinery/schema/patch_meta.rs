//! Strategic-merge-patch and list-type metadata of the built-in Kubernetes API types.
//!
//! Kubernetes declares, per struct field, how a strategic merge patch treats the field
//! (`patchStrategy:"merge"`, `patchStrategy:"merge,retainKeys"`, `patchMergeKey:"name"` struct
//! tags) and how server-side apply and structural schemas treat lists and maps
//! (`+listType=atomic|set|map`, `+listMapKey=...`, `+mapType=atomic|granular` and the field-level
//! `+structType=...` markers). The OpenAPI documents served by kube-apiserver carry the same facts
//! as the `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`,
//! `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and `x-kubernetes-map-type`
//! extensions, and `kubectl apply` (client-side, three-way strategic merge) reads them from there.
//!
//! This module is a static table of those facts, transcribed from
//! `staging/src/k8s.io/api/<group>/<version>/types.go`,
//! `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go` and
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/types*.go` of Kubernetes
//! v1.36.2, plus the fields that Kubernetes 1.37 added to these groups (the schemas of
//! `k8s-openapi`'s `latest` feature). Covered groups: core/v1, apps/v1, batch/v1,
//! authentication.k8s.io/v1, autoscaling/v1, autoscaling/v2, certificates.k8s.io/v1,
//! coordination.k8s.io/v1, discovery.k8s.io/v1, events.k8s.io/v1, networking.k8s.io/v1,
//! policy/v1, rbac.authorization.k8s.io/v1, scheduling.k8s.io/v1, storage.k8s.io/v1,
//! apiextensions.k8s.io/v1 and meta/v1. Groups and types without any such field
//! (coordination, events, scheduling, autoscaling/v1, ...) simply have no entries.
//!
//! Fields of embedded (`json:",inline"`) structs are listed under the embedding definition, e.g.
//! `EphemeralContainerCommon`'s fields under `io.k8s.api.core.v1.EphemeralContainer`. Where 1.37
//! changed an existing field, the 1.36 value is kept so that the table matches what a 1.36
//! kube-apiserver serves: `PodStatus.nodeAllocatableResourceClaimStatuses` is `atomic` here
//! (1.37: `map` keyed by `resourceClaimName`, merge key `resourceClaimName`).
//!
//! Definition names are the OpenAPI definition names (as `k8s-openapi` names them, e.g.
//! `io.k8s.api.core.v1.PodSpec`); field names are the JSON (camelCase) property names.

/// Patch and list metadata of one field.
///
/// Each member corresponds to one OpenAPI extension of the field's property schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldMeta {
    /// `x-kubernetes-patch-strategy`: `"merge"`, `"retainKeys"`, `"merge,retainKeys"` or
    /// `"replace"`.
    pub patch_strategy: Option<&'static str>,
    /// `x-kubernetes-patch-merge-key`: the key identifying list items in a strategic merge patch.
    pub patch_merge_key: Option<&'static str>,
    /// `x-kubernetes-list-type`: `"atomic"`, `"set"` or `"map"`.
    pub list_type: Option<&'static str>,
    /// `x-kubernetes-list-map-keys`: the keys of a `map` list, in declaration order (empty
    /// otherwise).
    pub list_map_keys: &'static [&'static str],
    /// `x-kubernetes-map-type`: `"atomic"` or `"granular"`.
    pub map_type: Option<&'static str>,
}

/// A field without any metadata; the base the helpers below build on.
const NONE: FieldMeta = FieldMeta {
    patch_strategy: None,
    patch_merge_key: None,
    list_type: None,
    list_map_keys: &[],
    map_type: None,
};

/// `+listType=atomic`.
const ATOMIC: FieldMeta = FieldMeta {
    list_type: Some("atomic"),
    ..NONE
};

/// `+listType=set`.
const SET: FieldMeta = FieldMeta {
    list_type: Some("set"),
    ..NONE
};

/// `+mapType=atomic`.
const MAP_ATOMIC: FieldMeta = FieldMeta {
    map_type: Some("atomic"),
    ..NONE
};

/// `+structType=granular` (emitted as `x-kubernetes-map-type: granular`).
const MAP_GRANULAR: FieldMeta = FieldMeta {
    map_type: Some("granular"),
    ..NONE
};

/// `+listType=map` with the given `+listMapKey`s and no patch strategy.
const fn list_map(keys: &'static [&'static str]) -> FieldMeta {
    FieldMeta {
        list_type: Some("map"),
        list_map_keys: keys,
        ..NONE
    }
}

/// `patchStrategy:"merge" patchMergeKey:"<key>"` on a `+listType=map` list.
const fn merge(key: &'static str, keys: &'static [&'static str]) -> FieldMeta {
    FieldMeta {
        patch_strategy: Some("merge"),
        patch_merge_key: Some(key),
        ..list_map(keys)
    }
}

/// An explicit patch strategy and merge key on top of `base`.
const fn patch(strategy: &'static str, key: Option<&'static str>, base: FieldMeta) -> FieldMeta {
    FieldMeta {
        patch_strategy: Some(strategy),
        patch_merge_key: key,
        ..base
    }
}

/// The table, sorted by (definition, field) so that lookups can binary-search it.
#[rustfmt::skip]
static TABLE: &[(&str, &str, FieldMeta)] = &[
    // io.k8s.api.apps.v1
    ("io.k8s.api.apps.v1.DaemonSetStatus", "conditions", merge("type", &["type"])),
    ("io.k8s.api.apps.v1.DeploymentSpec", "strategy", patch("retainKeys", None, NONE)),
    ("io.k8s.api.apps.v1.DeploymentStatus", "conditions", merge("type", &["type"])),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions", merge("type", &["type"])),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "volumeClaimTemplates", ATOMIC),
    ("io.k8s.api.apps.v1.StatefulSetStatus", "conditions", merge("type", &["type"])),
    // io.k8s.api.authentication.v1
    ("io.k8s.api.authentication.v1.TokenRequestSpec", "audiences", ATOMIC),
    ("io.k8s.api.authentication.v1.TokenReviewSpec", "audiences", ATOMIC),
    ("io.k8s.api.authentication.v1.TokenReviewStatus", "audiences", ATOMIC),
    ("io.k8s.api.authentication.v1.UserInfo", "groups", ATOMIC),
    // io.k8s.api.autoscaling.v2
    ("io.k8s.api.autoscaling.v2.HPAScalingRules", "policies", ATOMIC),
    ("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec", "metrics", ATOMIC),
    ("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "conditions", merge("type", &["type"])),
    ("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentMetrics", ATOMIC),
    // io.k8s.api.batch.v1
    ("io.k8s.api.batch.v1.CronJobStatus", "active", ATOMIC),
    ("io.k8s.api.batch.v1.JobSchedulingConfiguration", "resourceClaims", merge("name", &["name"])),
    ("io.k8s.api.batch.v1.JobStatus", "conditions", patch("merge", Some("type"), ATOMIC)),
    ("io.k8s.api.batch.v1.PodFailurePolicy", "rules", ATOMIC),
    ("io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement", "values", SET),
    ("io.k8s.api.batch.v1.PodFailurePolicyRule", "onPodConditions", ATOMIC),
    ("io.k8s.api.batch.v1.SuccessPolicy", "rules", ATOMIC),
    ("io.k8s.api.batch.v1.UncountedTerminatedPods", "failed", SET),
    ("io.k8s.api.batch.v1.UncountedTerminatedPods", "succeeded", SET),
    // io.k8s.api.certificates.v1
    ("io.k8s.api.certificates.v1.CertificateSigningRequestSpec", "groups", ATOMIC),
    ("io.k8s.api.certificates.v1.CertificateSigningRequestSpec", "usages", ATOMIC),
    ("io.k8s.api.certificates.v1.CertificateSigningRequestStatus", "conditions", list_map(&["type"])),
    ("io.k8s.api.certificates.v1.PodCertificateRequestStatus", "conditions", merge("type", &["type"])),
    // io.k8s.api.core.v1
    ("io.k8s.api.core.v1.Capabilities", "add", ATOMIC),
    ("io.k8s.api.core.v1.Capabilities", "drop", ATOMIC),
    ("io.k8s.api.core.v1.CephFSPersistentVolumeSource", "monitors", ATOMIC),
    ("io.k8s.api.core.v1.CephFSVolumeSource", "monitors", ATOMIC),
    ("io.k8s.api.core.v1.ComponentStatus", "conditions", merge("type", &["type"])),
    ("io.k8s.api.core.v1.ConfigMapProjection", "items", ATOMIC),
    ("io.k8s.api.core.v1.ConfigMapVolumeSource", "items", ATOMIC),
    ("io.k8s.api.core.v1.Container", "args", ATOMIC),
    ("io.k8s.api.core.v1.Container", "command", ATOMIC),
    ("io.k8s.api.core.v1.Container", "env", merge("name", &["name"])),
    ("io.k8s.api.core.v1.Container", "envFrom", ATOMIC),
    ("io.k8s.api.core.v1.Container", "ports", merge("containerPort", &["containerPort", "protocol"])),
    ("io.k8s.api.core.v1.Container", "resizePolicy", ATOMIC),
    ("io.k8s.api.core.v1.Container", "restartPolicyRules", ATOMIC),
    ("io.k8s.api.core.v1.Container", "volumeDevices", merge("devicePath", &["devicePath"])),
    ("io.k8s.api.core.v1.Container", "volumeMounts", merge("mountPath", &["mountPath"])),
    ("io.k8s.api.core.v1.ContainerImage", "names", ATOMIC),
    ("io.k8s.api.core.v1.ContainerRestartRuleOnExitCodes", "values", SET),
    ("io.k8s.api.core.v1.ContainerStatus", "allocatedResourcesStatus", merge("name", &["name"])),
    ("io.k8s.api.core.v1.ContainerStatus", "volumeMounts", merge("mountPath", &["mountPath"])),
    ("io.k8s.api.core.v1.DownwardAPIProjection", "items", ATOMIC),
    ("io.k8s.api.core.v1.DownwardAPIVolumeSource", "items", ATOMIC),
    ("io.k8s.api.core.v1.EndpointSubset", "addresses", ATOMIC),
    ("io.k8s.api.core.v1.EndpointSubset", "notReadyAddresses", ATOMIC),
    ("io.k8s.api.core.v1.EndpointSubset", "ports", ATOMIC),
    ("io.k8s.api.core.v1.Endpoints", "subsets", ATOMIC),
    ("io.k8s.api.core.v1.EphemeralContainer", "args", ATOMIC),
    ("io.k8s.api.core.v1.EphemeralContainer", "command", ATOMIC),
    ("io.k8s.api.core.v1.EphemeralContainer", "env", merge("name", &["name"])),
    ("io.k8s.api.core.v1.EphemeralContainer", "envFrom", ATOMIC),
    ("io.k8s.api.core.v1.EphemeralContainer", "ports", merge("containerPort", &["containerPort", "protocol"])),
    ("io.k8s.api.core.v1.EphemeralContainer", "resizePolicy", ATOMIC),
    ("io.k8s.api.core.v1.EphemeralContainer", "restartPolicyRules", ATOMIC),
    ("io.k8s.api.core.v1.EphemeralContainer", "volumeDevices", merge("devicePath", &["devicePath"])),
    ("io.k8s.api.core.v1.EphemeralContainer", "volumeMounts", merge("mountPath", &["mountPath"])),
    ("io.k8s.api.core.v1.ExecAction", "command", ATOMIC),
    ("io.k8s.api.core.v1.FCVolumeSource", "targetWWNs", ATOMIC),
    ("io.k8s.api.core.v1.FCVolumeSource", "wwids", ATOMIC),
    ("io.k8s.api.core.v1.HTTPGetAction", "httpHeaders", ATOMIC),
    ("io.k8s.api.core.v1.HostAlias", "hostnames", ATOMIC),
    ("io.k8s.api.core.v1.ISCSIPersistentVolumeSource", "portals", ATOMIC),
    ("io.k8s.api.core.v1.ISCSIVolumeSource", "portals", ATOMIC),
    ("io.k8s.api.core.v1.LimitRangeSpec", "limits", ATOMIC),
    ("io.k8s.api.core.v1.LinuxContainerUser", "supplementalGroups", ATOMIC),
    ("io.k8s.api.core.v1.LoadBalancerIngress", "ports", ATOMIC),
    ("io.k8s.api.core.v1.LoadBalancerStatus", "ingress", ATOMIC),
    ("io.k8s.api.core.v1.NamespaceSpec", "finalizers", ATOMIC),
    ("io.k8s.api.core.v1.NamespaceStatus", "conditions", merge("type", &["type"])),
    ("io.k8s.api.core.v1.NodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", ATOMIC),
    ("io.k8s.api.core.v1.NodeAllocatableResourceClaimStatus", "containers", SET),
    ("io.k8s.api.core.v1.NodeAllocatableResourceClaimStatus", "mapping", merge("name", &["name"])),
    ("io.k8s.api.core.v1.NodeAllocatableResourceClaimStatus", "overhead", merge("name", &["name"])),
    ("io.k8s.api.core.v1.NodePodPreemptionPolicy", "disableResizePreemption", SET),
    ("io.k8s.api.core.v1.NodeSelector", "nodeSelectorTerms", ATOMIC),
    ("io.k8s.api.core.v1.NodeSelectorRequirement", "values", ATOMIC),
    ("io.k8s.api.core.v1.NodeSelectorTerm", "matchExpressions", ATOMIC),
    ("io.k8s.api.core.v1.NodeSelectorTerm", "matchFields", ATOMIC),
    ("io.k8s.api.core.v1.NodeSpec", "podCIDRs", patch("merge", None, SET)),
    ("io.k8s.api.core.v1.NodeSpec", "taints", ATOMIC),
    ("io.k8s.api.core.v1.NodeStatus", "addresses", merge("type", &["type"])),
    ("io.k8s.api.core.v1.NodeStatus", "conditions", merge("type", &["type"])),
    ("io.k8s.api.core.v1.NodeStatus", "declaredFeatures", ATOMIC),
    ("io.k8s.api.core.v1.NodeStatus", "images", ATOMIC),
    ("io.k8s.api.core.v1.NodeStatus", "runtimeHandlers", ATOMIC),
    ("io.k8s.api.core.v1.NodeStatus", "volumesAttached", ATOMIC),
    ("io.k8s.api.core.v1.NodeStatus", "volumesInUse", ATOMIC),
    ("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "accessModes", ATOMIC),
    ("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "accessModes", ATOMIC),
    ("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "allocatedResourceStatuses", MAP_GRANULAR),
    ("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "conditions", merge("type", &["type"])),
    ("io.k8s.api.core.v1.PersistentVolumeSpec", "accessModes", ATOMIC),
    ("io.k8s.api.core.v1.PersistentVolumeSpec", "claimRef", MAP_GRANULAR),
    ("io.k8s.api.core.v1.PersistentVolumeSpec", "mountOptions", ATOMIC),
    ("io.k8s.api.core.v1.PodAffinity", "preferredDuringSchedulingIgnoredDuringExecution", ATOMIC),
    ("io.k8s.api.core.v1.PodAffinity", "requiredDuringSchedulingIgnoredDuringExecution", ATOMIC),
    ("io.k8s.api.core.v1.PodAffinityTerm", "matchLabelKeys", ATOMIC),
    ("io.k8s.api.core.v1.PodAffinityTerm", "mismatchLabelKeys", ATOMIC),
    ("io.k8s.api.core.v1.PodAffinityTerm", "namespaces", ATOMIC),
    ("io.k8s.api.core.v1.PodAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", ATOMIC),
    ("io.k8s.api.core.v1.PodAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", ATOMIC),
    ("io.k8s.api.core.v1.PodDNSConfig", "nameservers", ATOMIC),
    ("io.k8s.api.core.v1.PodDNSConfig", "options", ATOMIC),
    ("io.k8s.api.core.v1.PodDNSConfig", "searches", ATOMIC),
    ("io.k8s.api.core.v1.PodExtendedResourceClaimStatus", "requestMappings", ATOMIC),
    ("io.k8s.api.core.v1.PodSecurityContext", "supplementalGroups", ATOMIC),
    ("io.k8s.api.core.v1.PodSecurityContext", "sysctls", ATOMIC),
    ("io.k8s.api.core.v1.PodSpec", "containers", merge("name", &["name"])),
    ("io.k8s.api.core.v1.PodSpec", "ephemeralContainers", merge("name", &["name"])),
    ("io.k8s.api.core.v1.PodSpec", "evictionResponders", merge("name", &["name"])),
    ("io.k8s.api.core.v1.PodSpec", "hostAliases", merge("ip", &["ip"])),
    ("io.k8s.api.core.v1.PodSpec", "imagePullSecrets", merge("name", &["name"])),
    ("io.k8s.api.core.v1.PodSpec", "initContainers", merge("name", &["name"])),
    ("io.k8s.api.core.v1.PodSpec", "nodeSelector", MAP_ATOMIC),
    ("io.k8s.api.core.v1.PodSpec", "readinessGates", ATOMIC),
    ("io.k8s.api.core.v1.PodSpec", "resourceClaims", patch("merge,retainKeys", Some("name"), list_map(&["name"]))),
    ("io.k8s.api.core.v1.PodSpec", "schedulingGates", merge("name", &["name"])),
    ("io.k8s.api.core.v1.PodSpec", "tolerations", ATOMIC),
    ("io.k8s.api.core.v1.PodSpec", "topologySpreadConstraints", merge("topologyKey", &["topologyKey", "whenUnsatisfiable"])),
    ("io.k8s.api.core.v1.PodSpec", "volumes", patch("merge,retainKeys", Some("name"), list_map(&["name"]))),
    ("io.k8s.api.core.v1.PodStatus", "conditions", merge("type", &["type"])),
    ("io.k8s.api.core.v1.PodStatus", "containerStatuses", ATOMIC),
    ("io.k8s.api.core.v1.PodStatus", "ephemeralContainerStatuses", ATOMIC),
    ("io.k8s.api.core.v1.PodStatus", "hostIPs", patch("merge", Some("ip"), ATOMIC)),
    ("io.k8s.api.core.v1.PodStatus", "initContainerStatuses", ATOMIC),
    ("io.k8s.api.core.v1.PodStatus", "nodeAllocatableResourceClaimStatuses", ATOMIC),
    ("io.k8s.api.core.v1.PodStatus", "podIPs", merge("ip", &["ip"])),
    ("io.k8s.api.core.v1.PodStatus", "resourceClaimStatuses", patch("merge,retainKeys", Some("name"), list_map(&["name"]))),
    ("io.k8s.api.core.v1.PodStatus", "volumeHealth", list_map(&["name"])),
    ("io.k8s.api.core.v1.PodVolumeHealth", "healthConditions", merge("status", &["status", "reason"])),
    ("io.k8s.api.core.v1.ProjectedVolumeSource", "sources", ATOMIC),
    ("io.k8s.api.core.v1.RBDPersistentVolumeSource", "monitors", ATOMIC),
    ("io.k8s.api.core.v1.RBDVolumeSource", "monitors", ATOMIC),
    ("io.k8s.api.core.v1.ReplicationControllerSpec", "selector", MAP_ATOMIC),
    ("io.k8s.api.core.v1.ReplicationControllerStatus", "conditions", merge("type", &["type"])),
    ("io.k8s.api.core.v1.ResourceQuotaSpec", "scopes", ATOMIC),
    ("io.k8s.api.core.v1.ResourceRequirements", "claims", list_map(&["name"])),
    ("io.k8s.api.core.v1.ResourceStatus", "resources", list_map(&["resourceID"])),
    ("io.k8s.api.core.v1.ScopeSelector", "matchExpressions", ATOMIC),
    ("io.k8s.api.core.v1.ScopedResourceSelectorRequirement", "values", ATOMIC),
    ("io.k8s.api.core.v1.SecretProjection", "items", ATOMIC),
    ("io.k8s.api.core.v1.SecretVolumeSource", "items", ATOMIC),
    ("io.k8s.api.core.v1.ServiceAccount", "imagePullSecrets", ATOMIC),
    ("io.k8s.api.core.v1.ServiceAccount", "secrets", merge("name", &["name"])),
    ("io.k8s.api.core.v1.ServiceSpec", "clusterIPs", ATOMIC),
    ("io.k8s.api.core.v1.ServiceSpec", "externalIPs", ATOMIC),
    ("io.k8s.api.core.v1.ServiceSpec", "ipFamilies", ATOMIC),
    ("io.k8s.api.core.v1.ServiceSpec", "loadBalancerSourceRanges", ATOMIC),
    ("io.k8s.api.core.v1.ServiceSpec", "ports", merge("port", &["port", "protocol"])),
    ("io.k8s.api.core.v1.ServiceSpec", "selector", MAP_ATOMIC),
    ("io.k8s.api.core.v1.ServiceStatus", "conditions", merge("type", &["type"])),
    ("io.k8s.api.core.v1.TopologySelectorLabelRequirement", "values", ATOMIC),
    ("io.k8s.api.core.v1.TopologySelectorTerm", "matchLabelExpressions", ATOMIC),
    ("io.k8s.api.core.v1.TopologySpreadConstraint", "matchLabelKeys", ATOMIC),
    ("io.k8s.api.core.v1.VolumeHealthStatus", "healthConditions", merge("status", &["status", "reason"])),
    ("io.k8s.api.core.v1.VolumeMount", "bindMountOptions", SET),
    // io.k8s.api.discovery.v1
    ("io.k8s.api.discovery.v1.Endpoint", "addresses", SET),
    ("io.k8s.api.discovery.v1.EndpointHints", "forNodes", ATOMIC),
    ("io.k8s.api.discovery.v1.EndpointHints", "forZones", ATOMIC),
    ("io.k8s.api.discovery.v1.EndpointSlice", "endpoints", ATOMIC),
    ("io.k8s.api.discovery.v1.EndpointSlice", "ports", ATOMIC),
    // io.k8s.api.networking.v1
    ("io.k8s.api.networking.v1.HTTPIngressRuleValue", "paths", ATOMIC),
    ("io.k8s.api.networking.v1.IPBlock", "except", ATOMIC),
    ("io.k8s.api.networking.v1.IngressLoadBalancerIngress", "ports", ATOMIC),
    ("io.k8s.api.networking.v1.IngressLoadBalancerStatus", "ingress", ATOMIC),
    ("io.k8s.api.networking.v1.IngressSpec", "rules", ATOMIC),
    ("io.k8s.api.networking.v1.IngressSpec", "tls", ATOMIC),
    ("io.k8s.api.networking.v1.IngressTLS", "hosts", ATOMIC),
    ("io.k8s.api.networking.v1.NetworkPolicyEgressRule", "ports", ATOMIC),
    ("io.k8s.api.networking.v1.NetworkPolicyEgressRule", "to", ATOMIC),
    ("io.k8s.api.networking.v1.NetworkPolicyIngressRule", "from", ATOMIC),
    ("io.k8s.api.networking.v1.NetworkPolicyIngressRule", "ports", ATOMIC),
    ("io.k8s.api.networking.v1.NetworkPolicySpec", "egress", ATOMIC),
    ("io.k8s.api.networking.v1.NetworkPolicySpec", "ingress", ATOMIC),
    ("io.k8s.api.networking.v1.NetworkPolicySpec", "policyTypes", ATOMIC),
    ("io.k8s.api.networking.v1.ServiceCIDRSpec", "cidrs", ATOMIC),
    ("io.k8s.api.networking.v1.ServiceCIDRStatus", "conditions", merge("type", &["type"])),
    // io.k8s.api.policy.v1
    ("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "selector", patch("replace", None, NONE)),
    ("io.k8s.api.policy.v1.PodDisruptionBudgetStatus", "conditions", merge("type", &["type"])),
    // io.k8s.api.rbac.v1
    ("io.k8s.api.rbac.v1.AggregationRule", "clusterRoleSelectors", ATOMIC),
    ("io.k8s.api.rbac.v1.ClusterRole", "rules", ATOMIC),
    ("io.k8s.api.rbac.v1.ClusterRoleBinding", "subjects", ATOMIC),
    ("io.k8s.api.rbac.v1.PolicyRule", "apiGroups", ATOMIC),
    ("io.k8s.api.rbac.v1.PolicyRule", "nonResourceURLs", ATOMIC),
    ("io.k8s.api.rbac.v1.PolicyRule", "resourceNames", ATOMIC),
    ("io.k8s.api.rbac.v1.PolicyRule", "resources", ATOMIC),
    ("io.k8s.api.rbac.v1.PolicyRule", "verbs", ATOMIC),
    ("io.k8s.api.rbac.v1.Role", "rules", ATOMIC),
    ("io.k8s.api.rbac.v1.RoleBinding", "subjects", ATOMIC),
    // io.k8s.api.storage.v1
    ("io.k8s.api.storage.v1.CSIDriverSpec", "tokenRequests", ATOMIC),
    ("io.k8s.api.storage.v1.CSIDriverSpec", "volumeLifecycleModes", SET),
    ("io.k8s.api.storage.v1.CSINodeDriver", "topologyKeys", ATOMIC),
    ("io.k8s.api.storage.v1.CSINodeSpec", "drivers", merge("name", &["name"])),
    ("io.k8s.api.storage.v1.CSINodeStatus", "storageHealth", merge("name", &["name"])),
    ("io.k8s.api.storage.v1.StorageClass", "allowedTopologies", ATOMIC),
    ("io.k8s.api.storage.v1.StorageClass", "mountOptions", ATOMIC),
    ("io.k8s.api.storage.v1.StorageHealth", "healthConditions", ATOMIC),
    // io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionNames", "categories", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionNames", "shortNames", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec", "versions", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus", "conditions", list_map(&["type"])),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus", "storedVersions", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion", "additionalPrinterColumns", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion", "selectableFields", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "allOf", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "anyOf", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "enum", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "oneOf", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "required", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "x-kubernetes-list-map-keys", ATOMIC),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps", "x-kubernetes-validations", merge("rule", &["rule"])),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.WebhookConversion", "conversionReviewVersions", ATOMIC),
    // io.k8s.apimachinery.pkg.apis.meta.v1
    ("io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup", "serverAddressByClientCIDRs", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup", "versions", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList", "groups", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.APIResource", "categories", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.APIResource", "shortNames", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList", "resources", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions", "serverAddressByClientCIDRs", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions", "versions", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "dryRun", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.FieldSelectorRequirement", "values", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector", "matchExpressions", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement", "values", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", patch("merge", None, SET)),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "managedFields", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", merge("uid", &["uid"])),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails", "causes", ATOMIC),
];

/// Metadata for `field` of definition `definition`, if the field has any.
///
/// `definition` is an OpenAPI definition name such as `io.k8s.api.core.v1.PodSpec`; `field` is
/// the JSON property name, such as `containers`. Returns `None` for unknown definitions and for
/// fields without patch, list or map metadata.
pub fn field_meta(definition: &str, field: &str) -> Option<FieldMeta> {
    TABLE
        .binary_search_by(|(d, f, _)| (*d, *f).cmp(&(definition, field)))
        .ok()
        .map(|i| TABLE[i].2)
}

/// All entries as `(definition, field, metadata)`, sorted by definition and field (for emitting
/// OpenAPI extensions).
pub fn all() -> &'static [(&'static str, &'static str, FieldMeta)] {
    TABLE
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The recorded `/openapi/v3/<group-version>` documents of a real kube-apiserver 1.36.
    fn reference_dir() -> PathBuf {
        crate::reference::dir("openapi-v3")
    }

    /// Strings of a JSON string or array-of-strings value.
    fn strings(value: Option<&serde_json::Value>) -> Vec<String> {
        match value {
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().expect("string item").to_owned())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The table's metadata in the same shape the reference is compared in.
    fn described(meta: Option<FieldMeta>) -> [Vec<String>; 5] {
        let one = |s: Option<&str>| s.map(str::to_owned).into_iter().collect::<Vec<_>>();
        match meta {
            None => Default::default(),
            Some(m) => [
                one(m.patch_strategy),
                one(m.patch_merge_key),
                one(m.list_type),
                m.list_map_keys.iter().map(|k| (*k).to_owned()).collect(),
                one(m.map_type),
            ],
        }
    }

    #[test]
    fn matches_reference_openapi_v3() {
        const EXTENSIONS: [&str; 5] = [
            "x-kubernetes-patch-strategy",
            "x-kubernetes-patch-merge-key",
            "x-kubernetes-list-type",
            "x-kubernetes-list-map-keys",
            "x-kubernetes-map-type",
        ];
        let dir = reference_dir();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("read reference dir")
            .map(|e| e.expect("dir entry").path())
            .filter(|p| {
                p.extension().is_some_and(|e| e == "json")
                    && p.file_name().is_some_and(|n| n != "index.json")
            })
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no documents in {}", dir.display());

        let mut mismatches = Vec::new();
        let mut checked_with_metadata = 0usize;
        let mut seen = std::collections::BTreeSet::new();
        for file in &files {
            let text = std::fs::read_to_string(file).expect("read reference document");
            let doc: serde_json::Value = serde_json::from_str(&text).expect("parse reference");
            let Some(schemas) = doc
                .pointer("/components/schemas")
                .and_then(|s| s.as_object())
            else {
                continue;
            };
            for (definition, schema) in schemas {
                let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
                    continue;
                };
                for (field, property) in properties {
                    let expected = EXTENSIONS.map(|ext| strings(property.get(ext)));
                    let actual = described(field_meta(definition, field));
                    if expected.iter().any(|v| !v.is_empty()) {
                        checked_with_metadata += 1;
                    }
                    seen.insert((definition.clone(), field.clone()));
                    if expected != actual {
                        mismatches.push(format!(
                            "{definition}.{field} ({}): reference {expected:?}, table {actual:?}",
                            file.file_name().unwrap_or_default().to_string_lossy()
                        ));
                    }
                }
            }
        }
        mismatches.sort();
        mismatches.dedup();
        assert!(
            mismatches.is_empty(),
            "{} mismatches against {}:\n{}",
            mismatches.len(),
            dir.display(),
            mismatches.join("\n")
        );
        assert!(
            checked_with_metadata > 200,
            "only {checked_with_metadata} properties with metadata found"
        );
        // Spot check that the walk covered the definitions the table is mostly about.
        assert!(seen.contains(&("io.k8s.api.core.v1.PodSpec".into(), "containers".into())));
        assert!(seen.contains(&(
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta".into(),
            "ownerReferences".into()
        )));
    }

    #[test]
    fn table_is_sorted_unique_and_consistent() {
        for pair in TABLE.windows(2) {
            assert!(
                (pair[0].0, pair[0].1) < (pair[1].0, pair[1].1),
                "table not sorted/unique at {}.{} / {}.{}",
                pair[0].0,
                pair[0].1,
                pair[1].0,
                pair[1].1
            );
        }
        for (definition, field, meta) in all() {
            let at = format!("{definition}.{field}");
            assert_ne!(*meta, NONE, "{at}: entry without metadata");
            assert!(definition.starts_with("io.k8s."), "{at}");
            assert_eq!(
                meta.list_type == Some("map"),
                !meta.list_map_keys.is_empty(),
                "{at}: list map keys iff listType=map"
            );
            assert!(
                matches!(meta.list_type, None | Some("atomic" | "set" | "map")),
                "{at}"
            );
            assert!(
                matches!(meta.map_type, None | Some("atomic" | "granular")),
                "{at}"
            );
            assert!(
                meta.list_type.is_none() || meta.map_type.is_none(),
                "{at}: both list and map type"
            );
            assert!(
                matches!(
                    meta.patch_strategy,
                    None | Some("merge" | "retainKeys" | "merge,retainKeys" | "replace")
                ),
                "{at}"
            );
            if meta.patch_merge_key.is_some() {
                assert!(
                    meta.patch_strategy.is_some_and(|s| s.starts_with("merge")),
                    "{at}: merge key without merge strategy"
                );
            }
            assert_eq!(field_meta(definition, field), Some(*meta), "{at}");
        }
    }

    #[test]
    fn lookups() {
        let containers = field_meta("io.k8s.api.core.v1.PodSpec", "containers").unwrap();
        assert_eq!(containers.patch_strategy, Some("merge"));
        assert_eq!(containers.patch_merge_key, Some("name"));
        assert_eq!(containers.list_type, Some("map"));
        assert_eq!(containers.list_map_keys, &["name"]);

        let volumes = field_meta("io.k8s.api.core.v1.PodSpec", "volumes").unwrap();
        assert_eq!(volumes.patch_strategy, Some("merge,retainKeys"));

        let ports = field_meta("io.k8s.api.core.v1.ServiceSpec", "ports").unwrap();
        assert_eq!(ports.patch_merge_key, Some("port"));
        assert_eq!(ports.list_map_keys, &["port", "protocol"]);

        let finalizers = field_meta(
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "finalizers",
        )
        .unwrap();
        assert_eq!(finalizers.patch_strategy, Some("merge"));
        assert_eq!(finalizers.patch_merge_key, None);
        assert_eq!(finalizers.list_type, Some("set"));

        let owners = field_meta(
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "ownerReferences",
        )
        .unwrap();
        assert_eq!(owners.patch_merge_key, Some("uid"));
        assert_eq!(owners.list_map_keys, &["uid"]);

        let strategy = field_meta("io.k8s.api.apps.v1.DeploymentSpec", "strategy").unwrap();
        assert_eq!(strategy.patch_strategy, Some("retainKeys"));
        assert_eq!(strategy.list_type, None);

        let eph_env = field_meta("io.k8s.api.core.v1.EphemeralContainer", "env").unwrap();
        assert_eq!(eph_env.patch_merge_key, Some("name"));

        let selector = field_meta("io.k8s.api.core.v1.ServiceSpec", "selector").unwrap();
        assert_eq!(selector.map_type, Some("atomic"));

        assert_eq!(field_meta("io.k8s.api.core.v1.PodSpec", "nodeName"), None);
        assert_eq!(
            field_meta("io.k8s.api.core.v1.NoSuchType", "containers"),
            None
        );
        assert_eq!(field_meta("", ""), None);
    }
}
