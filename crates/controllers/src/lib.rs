//! The built-in controllers (`deployment`, `replicaset`, `garbagecollector`, `namespace`,
//! ...) and their registry, run by `coxswain controller-manager`. Empty until the
//! controller-manager issue lands.
