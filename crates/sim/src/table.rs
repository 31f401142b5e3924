//! The scheduler's table of nodes: every node name it has heard of (from a node, or
//! from a pod bound to it) gets a small dense id, so that per-node data is indexed
//! rather than looked up by name in the hot loops of a scheduling cycle.

use std::collections::HashMap;

use crate::filters::{NodeView, Usage};
use crate::spread::LABEL_ZONE;

/// One node name's entry.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    /// The node's name.
    pub name: String,
    /// The node, while it exists.
    pub view: Option<NodeView>,
    /// Its `topology.kubernetes.io/zone` value, interned (see [`NodeTable::zones`]).
    pub zone: Option<usize>,
    /// What the pods counted on it hold (also for a node not seen, or gone).
    pub usage: Usage,
}

/// Node names to dense ids, and what the scheduler keeps per node.
#[derive(Debug, Default)]
pub(crate) struct NodeTable {
    ids: HashMap<String, usize>,
    slots: Vec<Slot>,
    zones: HashMap<String, usize>,
}

impl NodeTable {
    /// The id of `name`, made on first use (ids are never reused).
    pub fn id(&mut self, name: &str) -> usize {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.slots.len();
        self.slots.push(Slot {
            name: name.to_string(),
            ..Default::default()
        });
        self.ids.insert(name.to_string(), id);
        id
    }

    /// The id of `name`, if it has one.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.ids.get(name).copied()
    }

    /// The entry of `id`.
    pub fn slot(&self, id: usize) -> &Slot {
        &self.slots[id]
    }

    /// The entry of `id`, to change.
    pub fn slot_mut(&mut self, id: usize) -> &mut Slot {
        &mut self.slots[id]
    }

    /// The node of `id`, if it exists.
    pub fn view(&self, id: usize) -> Option<&NodeView> {
        self.slots.get(id).and_then(|s| s.view.as_ref())
    }

    /// Number of ids given out.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Number of distinct zone values seen (zone ids are below it).
    pub fn zones(&self) -> usize {
        self.zones.len()
    }

    /// Set the node of `view.name`; its id and the view it replaces.
    pub fn set_view(&mut self, view: NodeView) -> (usize, Option<NodeView>) {
        let id = self.id(&view.name);
        let zone = view.labels.get(LABEL_ZONE).map(|z| {
            let next = self.zones.len();
            *self.zones.entry(z.clone()).or_insert(next)
        });
        let slot = &mut self.slots[id];
        slot.zone = zone;
        (id, slot.view.replace(view))
    }

    /// Forget the node `name` (its usage stays with its id); its id if it existed.
    pub fn clear_view(&mut self, name: &str) -> Option<usize> {
        let id = self.find(name)?;
        let slot = &mut self.slots[id];
        slot.zone = None;
        slot.view.take().map(|_| id)
    }
}
