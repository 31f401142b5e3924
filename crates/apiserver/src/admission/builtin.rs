//! The built-in admission plugins kube-apiserver's `--disable-admission-plugins` can turn
//! off, by upstream's names. They all run by default, as in kube-apiserver; the write
//! path (`endpoints/write.rs`) asks [`Plugins::enabled`] where each one runs.
//!
//! A test server without a controller manager turns `ServiceAccount` off (as
//! controller-runtime's envtest does): without the service account controller no
//! namespace has its `default` account, and the plugin refuses pods whose account does
//! not exist.

use std::collections::BTreeSet;
use std::fmt;

/// A built-in admission plugin that can be turned off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Plugin {
    /// Pods' and PersistentVolumeClaims' defaults and bounds from LimitRanges.
    LimitRanger,
    /// A pod's service account: `default` when none is named, refused when it does not
    /// exist, its API credentials mounted and its image pull secrets copied.
    ServiceAccount,
    /// A pod's RuntimeClass: overhead, node selector and tolerations.
    RuntimeClass,
    /// ResourceQuota limits and the charge of their `status.used`.
    ResourceQuota,
}

impl Plugin {
    /// Every plugin, in upstream's order.
    pub const ALL: [Plugin; 4] = [
        Plugin::LimitRanger,
        Plugin::ServiceAccount,
        Plugin::RuntimeClass,
        Plugin::ResourceQuota,
    ];

    /// kube-apiserver's name of the plugin.
    pub fn name(self) -> &'static str {
        match self {
            Plugin::LimitRanger => "LimitRanger",
            Plugin::ServiceAccount => "ServiceAccount",
            Plugin::RuntimeClass => "RuntimeClass",
            Plugin::ResourceQuota => "ResourceQuota",
        }
    }

    /// The plugin of an upstream name, or an error naming the plugins there are.
    pub fn parse(name: &str) -> Result<Plugin, String> {
        Plugin::ALL
            .into_iter()
            .find(|p| p.name() == name.trim())
            .ok_or_else(|| {
                let known: Vec<&str> = Plugin::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "admission plugin {name:?} is unknown or cannot be turned off (these can: {})",
                    known.join(", ")
                )
            })
    }
}

impl fmt::Display for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which built-in plugins run: all but the disabled ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plugins {
    disabled: BTreeSet<Plugin>,
}

impl Plugins {
    /// All plugins but `disabled`.
    pub fn without(disabled: impl IntoIterator<Item = Plugin>) -> Plugins {
        Plugins {
            disabled: disabled.into_iter().collect(),
        }
    }

    /// Turn a plugin off.
    pub fn disable(&mut self, plugin: Plugin) {
        self.disabled.insert(plugin);
    }

    /// Turn a plugin back on.
    pub fn enable(&mut self, plugin: Plugin) {
        self.disabled.remove(&plugin);
    }

    /// Whether `plugin` runs.
    pub fn enabled(&self, plugin: Plugin) -> bool {
        !self.disabled.contains(&plugin)
    }

    /// The plugins turned off.
    pub fn disabled(&self) -> impl Iterator<Item = Plugin> + '_ {
        self.disabled.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_ones_are_refused() {
        for p in Plugin::ALL {
            assert_eq!(Plugin::parse(p.name()), Ok(p));
        }
        assert_eq!(Plugin::parse(" ServiceAccount"), Ok(Plugin::ServiceAccount));
        let e = Plugin::parse("serviceaccount").unwrap_err();
        assert!(
            e.contains("\"serviceaccount\"") && e.contains("ServiceAccount"),
            "{e}"
        );
        assert!(Plugin::parse("AlwaysPullImages").is_err());
    }

    #[test]
    fn all_run_but_the_disabled() {
        let all = Plugins::default();
        assert!(Plugin::ALL.iter().all(|p| all.enabled(*p)));
        let mut some = Plugins::without([Plugin::ServiceAccount]);
        some.disable(Plugin::ResourceQuota);
        some.disable(Plugin::LimitRanger);
        some.enable(Plugin::LimitRanger);
        assert!(!some.enabled(Plugin::ServiceAccount) && !some.enabled(Plugin::ResourceQuota));
        assert!(some.enabled(Plugin::LimitRanger) && some.enabled(Plugin::RuntimeClass));
        assert_eq!(
            some.disabled().collect::<Vec<_>>(),
            [Plugin::ServiceAccount, Plugin::ResourceQuota]
        );
    }
}
