//! VolumeAttachment (`storage.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `storage.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &VolumeAttachmentStrategy);

/// What VolumeAttachment does differently.
pub struct VolumeAttachmentStrategy;

impl Strategy for VolumeAttachmentStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::VOLUME_ATTACHMENT)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// VolumeAttachments.
    pub(crate) static VOLUME_ATTACHMENT: Printer = Printer {
        columns: &[
            NAME,
            Column {
                format: "name",
                ..string(
                    "Attacher",
                    field("io.k8s.api.storage.v1.VolumeAttachmentSpec", "attacher"),
                )
            },
            string(
                "PV",
                field(
                    "io.k8s.api.storage.v1.VolumeAttachmentSource",
                    "persistentVolumeName",
                ),
            ),
            string(
                "Node",
                field("io.k8s.api.storage.v1.VolumeAttachmentSpec", "nodeName"),
            ),
            boolean(
                "Attached",
                field("io.k8s.api.storage.v1.VolumeAttachmentStatus", "attached"),
            ),
            AGE,
        ],
        print: |v, now| {
            Row::of(vec![
                name(v),
                json!(s(v, "/spec/attacher")),
                json!(s(v, "/spec/source/persistentVolumeName")),
                json!(s(v, "/spec/nodeName")),
                json!(flag(v, "/status/attached")),
                age(v, now),
            ])
        },
    };
}
