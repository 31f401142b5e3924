//! The kinds the server serves and what each does differently.
//!
//! One module per API group and one file per kind (`apps/deployment.rs`,
//! `core/pod.rs`), each declaring its [`catalog::Kind`]: short names, categories and the
//! [`strategy::Strategy`] that holds what upstream keeps in
//! `pkg/registry/<group>/<resource>/strategy.go` (subresources, selectable fields,
//! defaults, what create and update keep or reset, validation, the table printer,
//! delete behaviour). [`builtin_kinds`] is the catalogue: one line per kind. Custom
//! resources join from their CustomResourceDefinitions ([`custom`]).
//!
//! Adding a built-in kind: write its file (start from a small one such as
//! `coordination/lease.rs`), declare it in its group's `mod.rs`, and add its line to
//! [`builtin_kinds`] (see `ARCHITECTURE.md`).

pub mod catalog;
pub mod conversion;
pub mod custom;
pub mod defaults;
pub mod rest;
pub mod table;
#[cfg(test)]
mod tests;
pub mod validation;
pub mod versions;

pub mod admissionregistration;
pub mod apiextensions;
pub mod apiregistration;
pub mod apps;
pub mod authentication;
pub mod authorization;
pub mod autoscaling;
pub mod batch;
pub mod certificates;
pub mod coordination;
pub mod core;
pub mod discovery;
pub mod events;
pub mod flowcontrol;
pub mod metrics;
pub mod networking;
pub mod node;
pub mod policy;
pub mod rbac;
pub mod resource;
pub mod scheduling;
pub mod storage;

use catalog::{builtin, ResourceDef};

/// The catalogue of built-in kinds: each line pairs a kind's Rust type (its names, scope
/// and schema) with its registry file's declaration. Groups come in discovery order
/// (upstream's group priorities): the order of their first line here.
pub fn builtin_kinds() -> Vec<ResourceDef> {
    use k8s_openapi::api as a;
    vec![
        builtin::<a::core::v1::Binding>(&core::binding::KIND),
        builtin::<a::core::v1::ConfigMap>(&core::configmap::KIND),
        builtin::<a::core::v1::Endpoints>(&core::endpoints::KIND),
        builtin::<a::core::v1::Event>(&core::event::KIND),
        builtin::<a::core::v1::LimitRange>(&core::limitrange::KIND),
        builtin::<a::core::v1::Namespace>(&core::namespace::KIND),
        builtin::<a::core::v1::Node>(&core::node::KIND),
        builtin::<a::core::v1::PersistentVolumeClaim>(&core::persistentvolumeclaim::KIND),
        builtin::<a::core::v1::PersistentVolume>(&core::persistentvolume::KIND),
        builtin::<a::core::v1::Pod>(&core::pod::KIND),
        builtin::<a::core::v1::PodTemplate>(&core::podtemplate::KIND),
        builtin::<a::core::v1::ReplicationController>(&core::replicationcontroller::KIND),
        builtin::<a::core::v1::ResourceQuota>(&core::resourcequota::KIND),
        builtin::<a::core::v1::Secret>(&core::secret::KIND),
        builtin::<a::core::v1::ServiceAccount>(&core::serviceaccount::KIND),
        builtin::<a::core::v1::Service>(&core::service::KIND),
        builtin::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>(&apiregistration::apiservice::KIND),
        builtin::<a::apps::v1::ControllerRevision>(&apps::controllerrevision::KIND),
        builtin::<a::apps::v1::DaemonSet>(&apps::daemonset::KIND),
        builtin::<a::apps::v1::Deployment>(&apps::deployment::KIND),
        builtin::<a::apps::v1::ReplicaSet>(&apps::replicaset::KIND),
        builtin::<a::apps::v1::StatefulSet>(&apps::statefulset::KIND),
        builtin::<a::events::v1::Event>(&events::event::KIND),
        builtin::<a::authentication::v1::SelfSubjectReview>(&authentication::SELF_SUBJECT_REVIEW),
        builtin::<a::authentication::v1::TokenReview>(&authentication::TOKEN_REVIEW),
        builtin::<a::authorization::v1::LocalSubjectAccessReview>(&authorization::LOCAL_SUBJECT_ACCESS_REVIEW),
        builtin::<a::authorization::v1::SelfSubjectAccessReview>(&authorization::SELF_SUBJECT_ACCESS_REVIEW),
        builtin::<a::authorization::v1::SelfSubjectRulesReview>(&authorization::SELF_SUBJECT_RULES_REVIEW),
        builtin::<a::authorization::v1::SubjectAccessReview>(&authorization::SUBJECT_ACCESS_REVIEW),
        builtin::<a::autoscaling::v2::HorizontalPodAutoscaler>(&autoscaling::horizontalpodautoscaler::KIND),
        builtin::<a::autoscaling::v1::HorizontalPodAutoscaler>(&autoscaling::horizontalpodautoscaler::KIND_V1),
        builtin::<a::batch::v1::CronJob>(&batch::cronjob::KIND),
        builtin::<a::batch::v1::Job>(&batch::job::KIND),
        builtin::<a::certificates::v1::CertificateSigningRequest>(&certificates::certificatesigningrequest::KIND),
        builtin::<a::networking::v1::IngressClass>(&networking::ingressclass::KIND),
        builtin::<a::networking::v1::Ingress>(&networking::ingress::KIND),
        builtin::<a::networking::v1::IPAddress>(&networking::ipaddress::KIND),
        builtin::<a::networking::v1::NetworkPolicy>(&networking::networkpolicy::KIND),
        builtin::<a::networking::v1::ServiceCIDR>(&networking::servicecidr::KIND),
        builtin::<a::policy::v1::PodDisruptionBudget>(&policy::poddisruptionbudget::KIND),
        builtin::<a::rbac::v1::ClusterRoleBinding>(&rbac::clusterrolebinding::KIND),
        builtin::<a::rbac::v1::ClusterRole>(&rbac::clusterrole::KIND),
        builtin::<a::rbac::v1::RoleBinding>(&rbac::rolebinding::KIND),
        builtin::<a::rbac::v1::Role>(&rbac::role::KIND),
        builtin::<a::storage::v1::CSIDriver>(&storage::csidriver::KIND),
        builtin::<a::storage::v1::CSINode>(&storage::csinode::KIND),
        builtin::<a::storage::v1::CSIStorageCapacity>(&storage::csistoragecapacity::KIND),
        builtin::<a::storage::v1::StorageClass>(&storage::storageclass::KIND),
        builtin::<a::storage::v1::VolumeAttachment>(&storage::volumeattachment::KIND),
        builtin::<a::storage::v1::VolumeAttributesClass>(&storage::volumeattributesclass::KIND),
        builtin::<a::admissionregistration::v1::MutatingAdmissionPolicy>(&admissionregistration::mutatingadmissionpolicy::KIND),
        builtin::<a::admissionregistration::v1::MutatingAdmissionPolicyBinding>(&admissionregistration::mutatingadmissionpolicybinding::KIND),
        builtin::<a::admissionregistration::v1::MutatingWebhookConfiguration>(&admissionregistration::mutatingwebhookconfiguration::KIND),
        builtin::<a::admissionregistration::v1::ValidatingAdmissionPolicy>(&admissionregistration::validatingadmissionpolicy::KIND),
        builtin::<a::admissionregistration::v1::ValidatingAdmissionPolicyBinding>(&admissionregistration::validatingadmissionpolicybinding::KIND),
        builtin::<a::admissionregistration::v1::ValidatingWebhookConfiguration>(&admissionregistration::validatingwebhookconfiguration::KIND),
        builtin::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(&apiextensions::customresourcedefinition::KIND),
        builtin::<a::scheduling::v1::PriorityClass>(&scheduling::priorityclass::KIND),
        builtin::<a::coordination::v1::Lease>(&coordination::lease::KIND),
        builtin::<a::node::v1::RuntimeClass>(&node::runtimeclass::KIND),
        builtin::<a::discovery::v1::EndpointSlice>(&discovery::endpointslice::KIND),
        builtin::<a::resource::v1::DeviceClass>(&resource::deviceclass::KIND),
        builtin::<a::resource::v1::ResourceClaim>(&resource::resourceclaim::KIND),
        builtin::<a::resource::v1::ResourceClaimTemplate>(&resource::resourceclaimtemplate::KIND),
        builtin::<a::resource::v1::ResourceSlice>(&resource::resourceslice::KIND),
        builtin::<a::flowcontrol::v1::FlowSchema>(&flowcontrol::flowschema::KIND),
        builtin::<a::flowcontrol::v1::PriorityLevelConfiguration>(&flowcontrol::prioritylevelconfiguration::KIND),
    ]
}
