//! Tests of the built-in kinds through the catalogue: each kind's behaviour as clients
//! see it, compared with a real kube-apiserver's answers.

mod defaults;
