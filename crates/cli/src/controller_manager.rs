//! `coxswain controller-manager`: kube-controller-manager's flags over
//! [`coxswain_controllers::controller_manager::run`].

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::ArgAction;
use coxswain_controllers::certificates::signer::SignerFiles;
use coxswain_controllers::controller_manager::{self, ControllerManagerConfig};
use coxswain_controllers::registry::ControllerManagerOptions;
use coxswain_runtime::authfilter::DelegatingAuthOptions;
use coxswain_runtime::serving::{SecureServing, ServingCertificate};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// kube-controller-manager's flags (those coxswain implements).
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Path to a kubeconfig file (in-cluster configuration when neither this nor --master
    /// is given).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The address of the Kubernetes API server (overrides the kubeconfig's server).
    #[arg(long)]
    master: Option<String>,
    /// Controllers to enable: '*' enables every controller on by default, 'foo' enables
    /// foo, '-foo' disables foo.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    controllers: Vec<String>,
    /// Run under leader election (a Lease) before doing any work.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    leader_elect: bool,
    /// How long a non-leader waits after the last renewal before taking over.
    #[arg(long, default_value = "15s", value_parser = go_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader retries renewing before it stops leading.
    #[arg(long, default_value = "10s", value_parser = go_duration)]
    leader_elect_renew_deadline: Duration,
    /// Wait between attempts to acquire or renew leadership.
    #[arg(long, default_value = "2s", value_parser = go_duration)]
    leader_elect_retry_period: Duration,
    /// Name of the Lease used for leader election.
    #[arg(long, default_value = "kube-controller-manager")]
    leader_elect_resource_name: String,
    /// Namespace of the Lease used for leader election.
    #[arg(long, default_value = "kube-system")]
    leader_elect_resource_namespace: String,
    /// Deployments synced concurrently.
    #[arg(long, default_value_t = 5)]
    concurrent_deployment_syncs: usize,
    /// ReplicaSets synced concurrently.
    #[arg(long, default_value_t = 5)]
    concurrent_replicaset_syncs: usize,
    /// ReplicationControllers synced concurrently.
    #[arg(long, default_value_t = 5)]
    concurrent_rc_syncs: usize,
    /// StatefulSets synced concurrently.
    #[arg(long, default_value_t = 5)]
    concurrent_statefulset_syncs: usize,
    /// The number of daemonset objects that are allowed to sync concurrently. Larger
    /// number = more responsive daemonsets, but more CPU (and network) load.
    #[arg(long, default_value_t = 2)]
    concurrent_daemonset_syncs: usize,
    /// The number of service endpoint syncing operations that will be done
    /// concurrently (the EndpointSlice controller's workers).
    #[arg(long, default_value_t = 5)]
    concurrent_service_endpoint_syncs: usize,
    /// The maximum number of endpoints that will be added to an EndpointSlice (1 to
    /// 1000).
    #[arg(long, default_value_t = 100)]
    max_endpoints_per_slice: usize,
    /// The length of endpoint slice updates batching period: pod changes are processed
    /// after this delay, batching them.
    #[arg(long, default_value = "0s", value_parser = go_duration)]
    endpointslice_updates_batch_period: Duration,
    /// Enables the generic garbage collector.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    enable_garbage_collector: bool,
    /// The number of cron job objects that are allowed to sync concurrently.
    #[arg(long, default_value_t = 5)]
    concurrent_cron_job_syncs: usize,
    /// The number of ttl-after-finished-controller workers that are allowed to sync
    /// concurrently.
    #[arg(long, default_value_t = 5)]
    concurrent_ttl_after_finished_syncs: usize,
    /// Number of terminated pods that can exist before the terminated pod garbage
    /// collector starts deleting terminated pods. If <= 0, the terminated pod garbage
    /// collector is disabled.
    #[arg(long, default_value_t = 12500, allow_negative_numbers = true)]
    terminated_pod_gc_threshold: i32,
    /// Garbage collector workers (per queue).
    #[arg(long, default_value_t = 20)]
    concurrent_gc_syncs: usize,
    /// Jobs synced concurrently (and orphan pods of Jobs handled concurrently).
    #[arg(long, default_value_t = 5)]
    concurrent_job_syncs: usize,
    /// Namespaces deleted concurrently.
    #[arg(long, default_value_t = 10)]
    concurrent_namespace_syncs: usize,
    /// How often terminating namespaces are looked at again.
    #[arg(long, default_value = "5m0s", value_parser = go_duration)]
    namespace_sync_period: Duration,
    /// Namespaces the service account controller syncs concurrently (upstream runs one
    /// worker and has no flag).
    #[arg(long, default_value_t = 1)]
    concurrent_serviceaccount_syncs: usize,
    /// The number of endpoint syncing operations that will be done concurrently. Larger
    /// number = faster endpoint updating, but more CPU (and network) load.
    #[arg(long, default_value_t = 5)]
    concurrent_endpoint_syncs: usize,
    /// Length of endpoint updates batching period. Processing of pod changes will be
    /// delayed by this duration to join them with potential upcoming updates and reduce
    /// the overall number of endpoints updates.
    #[arg(long, default_value = "0s", value_parser = go_duration)]
    endpoint_updates_batch_period: Duration,
    /// The number of service endpoint syncing operations that will be done concurrently
    /// by the endpointslice-mirroring-controller.
    #[arg(long, default_value_t = 5)]
    mirroring_concurrent_service_endpoint_syncs: usize,
    /// The maximum number of endpoints that will be added to an EndpointSlice by the
    /// endpointslice-mirroring-controller (1 to 1000).
    #[arg(long, default_value_t = 1000)]
    mirroring_max_endpoints_per_subset: usize,
    /// The length of EndpointSlice updates batching period for
    /// endpointslice-mirroring-controller: processing of EndpointSlice changes is delayed
    /// by this duration to join them with potential upcoming updates.
    #[arg(long, default_value = "0s", value_parser = go_duration)]
    mirroring_endpointslice_updates_batch_period: Duration,
    /// Should CIDRs for Pods be allocated and set on the cloud provider (the
    /// node-ipam-controller runs only with this).
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    allocate_node_cidrs: bool,
    /// CIDR Range for Pods in cluster. Requires --allocate-node-cidrs to be true
    /// (comma separated, one per IP family).
    #[arg(long, default_value = "")]
    cluster_cidr: String,
    /// CIDR Range for Services in cluster, kept out of the nodes' pod CIDRs (comma
    /// separated for dual stack).
    #[arg(long, default_value = "")]
    service_cluster_ip_range: String,
    /// Mask size for node cidr in cluster. Default is 24 for IPv4 and 64 for IPv6.
    #[arg(long, default_value_t = 0)]
    node_cidr_mask_size: u8,
    /// Mask size for IPv4 node cidr in dual-stack cluster. Default is 24.
    #[arg(long, default_value_t = 0)]
    node_cidr_mask_size_ipv4: u8,
    /// Mask size for IPv6 node cidr in dual-stack cluster. Default is 64.
    #[arg(long, default_value_t = 0)]
    node_cidr_mask_size_ipv6: u8,
    /// The period for syncing NodeStatus in the node lifecycle controller.
    #[arg(long, default_value = "5s", value_parser = go_duration)]
    node_monitor_period: Duration,
    /// Amount of time which we allow running Node to be unresponsive before marking it
    /// unhealthy (its conditions Unknown).
    #[arg(long, default_value = "50s", value_parser = go_duration)]
    node_monitor_grace_period: Duration,
    /// Amount of time which we allow starting Node to be unresponsive before marking it
    /// unhealthy.
    #[arg(long, default_value = "1m0s", value_parser = go_duration)]
    node_startup_grace_period: Duration,
    /// Number of nodes per second on which pods are deleted (tainted NoExecute) in case
    /// of node failure when a zone is healthy.
    #[arg(long, default_value_t = 0.1)]
    node_eviction_rate: f32,
    /// Number of nodes per second on which pods are deleted in case of node failure
    /// when a zone is unhealthy (see --unhealthy-zone-threshold).
    #[arg(long, default_value_t = 0.01)]
    secondary_node_eviction_rate: f32,
    /// Number of nodes from which the node lifecycle controller treats the cluster as
    /// large for the eviction logic (smaller unhealthy zones stop evictions).
    #[arg(long, default_value_t = 50)]
    large_cluster_size_threshold: i32,
    /// Fraction of Nodes in a zone which needs to be not Ready (minimum 3) for the zone
    /// to be treated as unhealthy.
    #[arg(long, default_value_t = 0.55)]
    unhealthy_zone_threshold: f32,
    /// The period for syncing the number of pods in horizontal pod autoscaler.
    #[arg(long, default_value = "15s", value_parser = go_duration)]
    horizontal_pod_autoscaler_sync_period: Duration,
    /// The minimum change (from 1.0) in the desired-to-actual metrics ratio for the
    /// horizontal pod autoscaler to consider scaling.
    #[arg(long, default_value_t = 0.1)]
    horizontal_pod_autoscaler_tolerance: f64,
    /// The period for which autoscaler will look backwards and not scale down below any
    /// recommendation it made during that period.
    #[arg(long, default_value = "5m0s", value_parser = go_duration)]
    horizontal_pod_autoscaler_downscale_stabilization: Duration,
    /// The period after pod start when CPU samples might be skipped.
    #[arg(long, default_value = "5m0s", value_parser = go_duration)]
    horizontal_pod_autoscaler_cpu_initialization_period: Duration,
    /// The period after pod start during which readiness changes will be treated as
    /// initial readiness.
    #[arg(long, default_value = "30s", value_parser = go_duration)]
    horizontal_pod_autoscaler_initial_readiness_delay: Duration,
    /// The number of horizontal pod autoscaler objects that are allowed to sync
    /// concurrently.
    #[arg(long, default_value_t = 5)]
    concurrent_horizontal_pod_autoscaler_syncs: usize,
    /// Queries per second to the API server (0: unlimited).
    #[arg(long, default_value_t = 20.0)]
    kube_api_qps: f32,
    /// Burst of queries to the API server.
    #[arg(long, default_value_t = 30)]
    kube_api_burst: u32,
    /// The period for syncing persistent volumes and persistent volume claims
    /// (persistentvolume-binder-controller).
    #[arg(long = "pvclaimbinder-sync-period", default_value = "15s", value_parser = go_duration)]
    pv_claim_binder_sync_period: Duration,
    /// Enable dynamic provisioning for environments that support it.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    enable_dynamic_provisioning: bool,
    /// Enable HostPath PV provisioning when running without a cloud provider
    /// (deprecated upstream: "This flag is deprecated and will be deleted."; coxswain has
    /// no in-tree provisioners, so it changes nothing).
    #[arg(long = "enable-hostpath-provisioner", action = ArgAction::Set, num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    enable_host_path_provisioner: bool,
    /// The full path of the directory in which the flex volume plugin should search for
    /// additional third party volume plugins (accepted; no FlexVolume plugins run here).
    #[arg(
        long,
        default_value = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"
    )]
    flex_volume_plugin_dir: String,
    /// A comma-separated list of CIDRs which volume plugins should not be able to reach
    /// (upstream: currently a no-op, deprecated).
    #[arg(long, value_delimiter = ',')]
    volume_host_cidr_denylist: Vec<String>,
    /// Volume plugins may reach loopback addresses (upstream: currently a no-op,
    /// deprecated).
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    volume_host_allow_local_loopback: bool,
    /// The Recycle reclaim policy's flags (upstream
    /// `--pv-recycler-pod-template-filepath-nfs` and the five others): refused, as the
    /// Recycle policy is deprecated and coxswain runs no recycler.
    #[arg(long = "pv-recycler-pod-template-filepath-nfs", hide = true)]
    pv_recycler_pod_template_filepath_nfs: Option<String>,
    #[arg(long = "pv-recycler-minimum-timeout-nfs", hide = true)]
    pv_recycler_minimum_timeout_nfs: Option<String>,
    #[arg(long = "pv-recycler-increment-timeout-nfs", hide = true)]
    pv_recycler_increment_timeout_nfs: Option<String>,
    #[arg(long = "pv-recycler-pod-template-filepath-hostpath", hide = true)]
    pv_recycler_pod_template_filepath_hostpath: Option<String>,
    #[arg(long = "pv-recycler-minimum-timeout-hostpath", hide = true)]
    pv_recycler_minimum_timeout_hostpath: Option<String>,
    #[arg(long = "pv-recycler-timeout-increment-hostpath", hide = true)]
    pv_recycler_timeout_increment_hostpath: Option<String>,
    /// Informers resync at a random period between this and twice this.
    #[arg(long, default_value = "12h0m0s", value_parser = go_duration)]
    min_resync_period: Duration,
    /// Pause between starting controllers (jittered).
    #[arg(long, default_value = "0s", value_parser = go_duration)]
    controller_start_interval: Duration,
    /// The number of resource quotas that are allowed to sync concurrently. Larger
    /// number = more responsive quota management, but more CPU (and network) load.
    #[arg(long, default_value_t = 5)]
    concurrent_resource_quota_syncs: usize,
    /// The period for syncing quota usage status in the system.
    #[arg(long, default_value = "5m0s", value_parser = go_duration)]
    resource_quota_sync_period: Duration,
    /// PEM CA bundle published as `kube-root-ca.crt` in every namespace (default: the CA
    /// of the client configuration).
    #[arg(long)]
    root_ca_file: Option<PathBuf>,
    /// If true, use individual service account credentials for each controller
    /// (default false; `coxswain up`: true, as kubeadm runs kube-controller-manager).
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    use_service_account_credentials: Option<bool>,
    /// Filename containing a PEM-encoded private RSA or ECDSA key used to sign service
    /// account tokens.
    #[arg(long)]
    service_account_private_key_file: Option<PathBuf>,
    /// The number of service account token objects that are allowed to sync concurrently.
    /// Larger number = more responsive token generation, but more CPU (and network) load
    #[arg(long = "concurrent-serviceaccount-token-syncs", default_value_t = 5)]
    concurrent_serviceaccount_token_syncs: usize,
    /// The period of time since the last usage of an legacy service account token before
    /// it can be deleted.
    #[arg(long, default_value = "8760h0m0s", value_parser = go_duration)]
    legacy_service_account_token_clean_up_period: Duration,
    /// Log verbosity (klog levels: 0-3 info, 4-5 debug, 6+ trace).
    #[arg(long = "v", default_value_t = 0)]
    verbosity: u8,
    /// The number of ephemeral volume syncing operations that will be done concurrently.
    /// Larger number = faster ephemeral volume updating, but more CPU (and network) load
    #[arg(long = "concurrent-ephemeralvolume-syncs", default_value_t = 5)]
    concurrent_ephemeralvolume_syncs: usize,
    /// The reconciler sync wait time between volume attach detach. This duration must be
    /// larger than one second, and increasing this value from the default may allow for
    /// volumes to be mismatched with pods.
    #[arg(long, default_value = "1m0s", value_parser = go_duration)]
    attach_detach_reconcile_sync_period: Duration,
    /// Disable volume attach detach reconciler sync. Disabling this may cause volumes to
    /// be mismatched with pods. Use wisely.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    disable_attach_detach_reconcile_sync: bool,
    /// Prevent force detaching volumes based on maximum unmount time and node status. If
    /// this flag is set to true, the non-graceful node shutdown feature must be used to
    /// recover from node failure. See
    /// <https://k8s.io/docs/storage/disable-force-detach-on-timeout/>.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    disable_force_detach_on_timeout: bool,
    /// Filename containing a PEM-encoded X509 CA certificate used to issue
    /// cluster-scoped certificates. If specified, no more specific
    /// --cluster-signing-* flag may be specified.
    #[arg(long)]
    cluster_signing_cert_file: Option<PathBuf>,
    /// Filename containing a PEM-encoded RSA or ECDSA private key used to sign
    /// cluster-scoped certificates. If specified, no more specific --cluster-signing-*
    /// flag may be specified.
    #[arg(long)]
    cluster_signing_key_file: Option<PathBuf>,
    /// Filename containing a PEM-encoded X509 CA certificate used to issue certificates
    /// for the kubernetes.io/kubelet-serving signer.
    #[arg(long)]
    cluster_signing_kubelet_serving_cert_file: Option<PathBuf>,
    /// Filename containing a PEM-encoded RSA or ECDSA private key used to sign
    /// certificates for the kubernetes.io/kubelet-serving signer.
    #[arg(long)]
    cluster_signing_kubelet_serving_key_file: Option<PathBuf>,
    /// Filename containing a PEM-encoded X509 CA certificate used to issue certificates
    /// for the kubernetes.io/kube-apiserver-client-kubelet signer.
    #[arg(long)]
    cluster_signing_kubelet_client_cert_file: Option<PathBuf>,
    /// Filename containing a PEM-encoded RSA or ECDSA private key used to sign
    /// certificates for the kubernetes.io/kube-apiserver-client-kubelet signer.
    #[arg(long)]
    cluster_signing_kubelet_client_key_file: Option<PathBuf>,
    /// Filename containing a PEM-encoded X509 CA certificate used to issue certificates
    /// for the kubernetes.io/kube-apiserver-client signer.
    #[arg(long)]
    cluster_signing_kube_apiserver_client_cert_file: Option<PathBuf>,
    /// Filename containing a PEM-encoded RSA or ECDSA private key used to sign
    /// certificates for the kubernetes.io/kube-apiserver-client signer.
    #[arg(long)]
    cluster_signing_kube_apiserver_client_key_file: Option<PathBuf>,
    /// Filename containing a PEM-encoded X509 CA certificate used to issue certificates
    /// for the kubernetes.io/legacy-unknown signer.
    #[arg(long)]
    cluster_signing_legacy_unknown_cert_file: Option<PathBuf>,
    /// Filename containing a PEM-encoded RSA or ECDSA private key used to sign
    /// certificates for the kubernetes.io/legacy-unknown signer.
    #[arg(long)]
    cluster_signing_legacy_unknown_key_file: Option<PathBuf>,
    /// The max length of duration signed certificates will be given. Individual CSRs may
    /// request shorter certs by setting spec.expirationSeconds.
    #[arg(long, default_value = "8760h0m0s", value_parser = go_duration)]
    cluster_signing_duration: Duration,
}

/// kube-controller-manager's secure serving flags (`--secure-port`, certificates,
/// delegated authentication and authorization): `coxswain controller-manager` only, as
/// `coxswain up` serves its controller manager on a loopback port of its own and its API
/// server has flags of the same names.
#[derive(clap::Args, Clone, Debug)]
pub struct ServingArgs {
    /// The IP address on which to listen for the --secure-port port.
    #[arg(long, default_value = "0.0.0.0")]
    bind_address: IpAddr,
    /// The port on which to serve HTTPS with authentication and authorization (health,
    /// metrics, /debug/controllers). If 0, don't serve HTTPS at all.
    #[arg(long, default_value_t = 10257)]
    secure_port: u16,
    /// The directory where the TLS certs are located (a self-signed
    /// kube-controller-manager.crt/.key is generated there when missing; without it, in
    /// memory). If --tls-cert-file and --tls-private-key-file are provided, this flag will
    /// be ignored.
    #[arg(long)]
    cert_dir: Option<PathBuf>,
    /// File containing the default x509 Certificate for HTTPS. (CA cert, if any,
    /// concatenated after server cert). If HTTPS serving is enabled, and --tls-cert-file
    /// and --tls-private-key-file are not provided, a self-signed certificate and key are
    /// generated for the public address and saved to the directory specified by --cert-dir.
    #[arg(long)]
    tls_cert_file: Option<PathBuf>,
    /// File containing the default x509 private key matching --tls-cert-file.
    #[arg(long)]
    tls_private_key_file: Option<PathBuf>,
    /// If set, any request presenting a client certificate signed by one of the
    /// authorities in the client-ca-file is authenticated with an identity corresponding
    /// to the CommonName of the client certificate.
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
    /// kubeconfig file pointing at the 'core' kubernetes server with enough rights to
    /// create tokenreviews.authentication.k8s.io (default: the connection of --kubeconfig,
    /// --master or the in-cluster configuration).
    #[arg(long)]
    authentication_kubeconfig: Option<PathBuf>,
    /// If false, the authentication-kubeconfig will be used to lookup missing
    /// authentication configuration from the cluster.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    authentication_skip_lookup: bool,
    /// The duration to cache responses from the webhook token authenticator.
    #[arg(long, default_value = "10s", value_parser = go_duration)]
    authentication_token_webhook_cache_ttl: Duration,
    /// If true, failures to look up missing authentication configuration from the cluster
    /// are not considered fatal. Note that this can result in authentication that treats
    /// all requests as anonymous.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    authentication_tolerate_lookup_failure: bool,
    /// kubeconfig file pointing at the 'core' kubernetes server with enough rights to
    /// create subjectaccessreviews.authorization.k8s.io (default: the connection of
    /// --kubeconfig, --master or the in-cluster configuration).
    #[arg(long)]
    authorization_kubeconfig: Option<PathBuf>,
    /// A list of HTTP paths to skip during authorization, i.e. these are authorized
    /// without contacting the 'core' kubernetes server.
    #[arg(long, value_delimiter = ',', default_value = "/healthz,/readyz,/livez")]
    authorization_always_allow_paths: Vec<String>,
    /// The duration to cache 'authorized' responses from the webhook authorizer.
    #[arg(long, default_value = "10s", value_parser = go_duration)]
    authorization_webhook_cache_authorized_ttl: Duration,
    /// The duration to cache 'unauthorized' responses from the webhook authorizer.
    #[arg(long, default_value = "10s", value_parser = go_duration)]
    authorization_webhook_cache_unauthorized_ttl: Duration,
}

/// `coxswain controller-manager`'s flags: the controllers' and the secure port's.
#[derive(clap::Args, Clone, Debug)]
pub struct Command {
    /// The controllers' flags (shared with `coxswain up`).
    #[command(flatten)]
    pub args: Args,
    /// The secure port's flags.
    #[command(flatten)]
    pub serving: ServingArgs,
}

impl ServingArgs {
    /// The secure port's certificate and client CA (`--tls-cert-file`,
    /// `--tls-private-key-file`, `--cert-dir`, `--client-ca-file`).
    fn secure_serving(&self) -> anyhow::Result<SecureServing> {
        let certificate = match (&self.tls_cert_file, &self.tls_private_key_file) {
            (Some(cert), Some(key)) => ServingCertificate::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            (None, None) => match &self.cert_dir {
                Some(dir) if !dir.as_os_str().is_empty() => ServingCertificate::SelfSignedIn {
                    cert: dir.join("kube-controller-manager.crt"),
                    key: dir.join("kube-controller-manager.key"),
                },
                _ => ServingCertificate::SelfSigned,
            },
            _ => anyhow::bail!("--tls-cert-file and --tls-private-key-file must be given together"),
        };
        Ok(SecureServing {
            certificate,
            client_ca_file: self.client_ca_file.clone(),
            client_ca_pem: None,
        })
    }

    /// Delegated authentication and authorization of the secure port.
    fn delegating_auth(&self) -> DelegatingAuthOptions {
        DelegatingAuthOptions {
            token_cache_ttl: self.authentication_token_webhook_cache_ttl,
            allow_cache_ttl: self.authorization_webhook_cache_authorized_ttl,
            deny_cache_ttl: self.authorization_webhook_cache_unauthorized_ttl,
            always_allow_paths: self
                .authorization_always_allow_paths
                .iter()
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect(),
            ..DelegatingAuthOptions::default()
        }
    }

    /// Set the secure port's address, certificate and delegated authentication and
    /// authorization in `config`.
    fn apply(&self, config: &mut ControllerManagerConfig) -> anyhow::Result<()> {
        config.bind_address = self.bind_address;
        config.secure_port = self.secure_port;
        config.serving = self.secure_serving()?;
        config.auth = self.delegating_auth();
        config.authentication_skip_lookup = self.authentication_skip_lookup;
        config.authentication_tolerate_lookup_failure = self.authentication_tolerate_lookup_failure;
        Ok(())
    }
}

impl Args {
    /// Whether `--allocate-node-cidrs` hands the nodes' pod CIDRs to the node IPAM
    /// controller (the simulator then waits for them instead of assigning its own).
    pub fn allocates_node_cidrs(&self) -> bool {
        self.allocate_node_cidrs
    }

    /// Use `on` as `--use-service-account-credentials` when the flag is not given
    /// (`coxswain up`: each controller runs as its own service account).
    pub fn default_use_service_account_credentials(&mut self, on: bool) {
        self.use_service_account_credentials.get_or_insert(on);
    }

    /// Use `path` as `--service-account-private-key-file` when that flag is not given
    /// and the file exists (`coxswain up`: the API server's service account key).
    pub fn default_service_account_private_key_file(&mut self, path: &std::path::Path) {
        if self.service_account_private_key_file.is_none() && path.exists() {
            self.service_account_private_key_file = Some(path.to_path_buf());
        }
    }

    /// `coxswain up`: the CSR signers use the embedded API server's CA (`ca_cert`,
    /// `ca_key` in its data dir), so that issued client certificates authenticate to it,
    /// unless a `--cluster-signing-*` flag names other files; nothing when the key is
    /// not there.
    pub fn default_cluster_signing(&mut self, ca_cert: PathBuf, ca_key: PathBuf) {
        let given = [
            &self.cluster_signing_cert_file,
            &self.cluster_signing_key_file,
            &self.cluster_signing_kubelet_serving_cert_file,
            &self.cluster_signing_kubelet_serving_key_file,
            &self.cluster_signing_kubelet_client_cert_file,
            &self.cluster_signing_kubelet_client_key_file,
            &self.cluster_signing_kube_apiserver_client_cert_file,
            &self.cluster_signing_kube_apiserver_client_key_file,
            &self.cluster_signing_legacy_unknown_cert_file,
            &self.cluster_signing_legacy_unknown_key_file,
        ];
        if given.iter().any(|f| f.is_some()) || !ca_cert.is_file() || !ca_key.is_file() {
            return;
        }
        self.cluster_signing_cert_file = Some(ca_cert);
        self.cluster_signing_key_file = Some(ca_key);
    }

    /// The tracing filter `--v` asks for.
    pub fn log_filter(&self) -> &'static str {
        match self.verbosity {
            0..=3 => "info",
            4..=5 => "debug",
            _ => "trace",
        }
    }

    /// Each controller's options from its flags (upstream's per-controller
    /// configuration structs).
    fn controller_options(&self, root_ca: Option<String>) -> ControllerManagerOptions {
        let mut o = ControllerManagerOptions::default();
        o.deployment.concurrent_deployment_syncs = self.concurrent_deployment_syncs;
        o.replicaset.concurrent_rs_syncs = self.concurrent_replicaset_syncs;
        o.replication_controller.concurrent_rc_syncs = self.concurrent_rc_syncs;
        o.cronjob.concurrent_cron_job_syncs = self.concurrent_cron_job_syncs;
        o.ttl_after_finished.concurrent_ttl_syncs = self.concurrent_ttl_after_finished_syncs;
        o.podgc.terminated_pod_gc_threshold = self.terminated_pod_gc_threshold;
        o.statefulset.concurrent_statefulset_syncs = self.concurrent_statefulset_syncs;
        o.daemonset.concurrent_daemonset_syncs = self.concurrent_daemonset_syncs;
        o.endpoint_slice.concurrent_service_endpoint_syncs = self.concurrent_service_endpoint_syncs;
        o.endpoint_slice.max_endpoints_per_slice = self.max_endpoints_per_slice;
        o.endpoint_slice.endpoint_updates_batch_period = self.endpointslice_updates_batch_period;
        o.garbage_collector.enable_garbage_collector = self.enable_garbage_collector;
        o.garbage_collector.concurrent_gc_syncs = self.concurrent_gc_syncs;
        o.namespace.concurrent_namespace_syncs = self.concurrent_namespace_syncs;
        o.job.concurrent_job_syncs = self.concurrent_job_syncs;
        o.namespace.namespace_sync_period = self.namespace_sync_period;
        o.service_account.concurrent_serviceaccount_syncs = self.concurrent_serviceaccount_syncs;
        o.service_account.root_ca = root_ca;
        o.service_account.service_account_key_file = self.service_account_private_key_file.clone();
        o.service_account.concurrent_sa_token_syncs = self.concurrent_serviceaccount_token_syncs;
        o.legacy_sa_token_cleaner.clean_up_period =
            self.legacy_service_account_token_clean_up_period;
        o.endpoint.concurrent_endpoint_syncs = self.concurrent_endpoint_syncs;
        o.endpoint.endpoint_updates_batch_period = self.endpoint_updates_batch_period;
        o.endpointslice_mirroring.concurrent_service_endpoint_syncs =
            self.mirroring_concurrent_service_endpoint_syncs;
        o.endpointslice_mirroring.max_endpoints_per_subset =
            self.mirroring_max_endpoints_per_subset;
        o.endpointslice_mirroring.endpoint_updates_batch_period =
            self.mirroring_endpointslice_updates_batch_period;
        o.node_ipam.allocate_node_cidrs = self.allocate_node_cidrs;
        o.node_ipam.cluster_cidr = self.cluster_cidr.clone();
        o.node_ipam.service_cluster_ip_range = self.service_cluster_ip_range.clone();
        o.node_ipam.node_cidr_mask_size = self.node_cidr_mask_size;
        o.node_ipam.node_cidr_mask_size_ipv4 = self.node_cidr_mask_size_ipv4;
        o.node_ipam.node_cidr_mask_size_ipv6 = self.node_cidr_mask_size_ipv6;
        o.node_lifecycle.node_monitor_period = self.node_monitor_period;
        o.node_lifecycle.node_monitor_grace_period = self.node_monitor_grace_period;
        o.node_lifecycle.node_startup_grace_period = self.node_startup_grace_period;
        o.node_lifecycle.node_eviction_rate = self.node_eviction_rate;
        o.node_lifecycle.secondary_node_eviction_rate = self.secondary_node_eviction_rate;
        o.node_lifecycle.large_cluster_size_threshold = self.large_cluster_size_threshold;
        o.node_lifecycle.unhealthy_zone_threshold = self.unhealthy_zone_threshold;
        let pv = &mut o.persistent_volume_binder;
        pv.pv_claim_binder_sync_period = self.pv_claim_binder_sync_period;
        pv.enable_dynamic_provisioning = self.enable_dynamic_provisioning;
        pv.enable_host_path_provisioner = self.enable_host_path_provisioner;
        pv.flex_volume_plugin_dir = self.flex_volume_plugin_dir.clone();
        pv.volume_host_cidr_denylist = self.volume_host_cidr_denylist.clone();
        pv.volume_host_allow_local_loopback = self.volume_host_allow_local_loopback;
        o.ephemeral_volume.concurrent_ephemeral_volume_syncs =
            self.concurrent_ephemeralvolume_syncs;
        o.resource_quota.concurrent_resource_quota_syncs = self.concurrent_resource_quota_syncs;
        o.resource_quota.resource_quota_sync_period = self.resource_quota_sync_period;
        o.hpa.sync_period = self.horizontal_pod_autoscaler_sync_period;
        o.hpa.tolerance = self.horizontal_pod_autoscaler_tolerance;
        o.hpa.downscale_stabilization_window =
            self.horizontal_pod_autoscaler_downscale_stabilization;
        o.hpa.cpu_initialization_period = self.horizontal_pod_autoscaler_cpu_initialization_period;
        o.hpa.initial_readiness_delay = self.horizontal_pod_autoscaler_initial_readiness_delay;
        o.hpa.concurrent_syncs = self.concurrent_horizontal_pod_autoscaler_syncs;
        o.attach_detach.reconciler_sync_loop_period = self.attach_detach_reconcile_sync_period;
        o.attach_detach.disable_attach_detach_reconciler_sync =
            self.disable_attach_detach_reconcile_sync;
        o.attach_detach.disable_force_detach_on_timeout = self.disable_force_detach_on_timeout;
        let files = |cert: &Option<PathBuf>, key: &Option<PathBuf>| SignerFiles {
            cert_file: cert.clone(),
            key_file: key.clone(),
        };
        o.csr_signing.cluster_signing = files(
            &self.cluster_signing_cert_file,
            &self.cluster_signing_key_file,
        );
        o.csr_signing.kubelet_serving = files(
            &self.cluster_signing_kubelet_serving_cert_file,
            &self.cluster_signing_kubelet_serving_key_file,
        );
        o.csr_signing.kubelet_client = files(
            &self.cluster_signing_kubelet_client_cert_file,
            &self.cluster_signing_kubelet_client_key_file,
        );
        o.csr_signing.kube_apiserver_client = files(
            &self.cluster_signing_kube_apiserver_client_cert_file,
            &self.cluster_signing_kube_apiserver_client_key_file,
        );
        o.csr_signing.legacy_unknown = files(
            &self.cluster_signing_legacy_unknown_cert_file,
            &self.cluster_signing_legacy_unknown_key_file,
        );
        o.csr_signing.duration = self.cluster_signing_duration;
        o
    }

    /// The volume recycler's flags given, which are refused: the `Recycle` reclaim
    /// policy is deprecated upstream and coxswain has no recycler.
    fn pv_recycler_flags(&self) -> Vec<&'static str> {
        [
            (
                "--pv-recycler-pod-template-filepath-nfs",
                &self.pv_recycler_pod_template_filepath_nfs,
            ),
            (
                "--pv-recycler-minimum-timeout-nfs",
                &self.pv_recycler_minimum_timeout_nfs,
            ),
            (
                "--pv-recycler-increment-timeout-nfs",
                &self.pv_recycler_increment_timeout_nfs,
            ),
            (
                "--pv-recycler-pod-template-filepath-hostpath",
                &self.pv_recycler_pod_template_filepath_hostpath,
            ),
            (
                "--pv-recycler-minimum-timeout-hostpath",
                &self.pv_recycler_minimum_timeout_hostpath,
            ),
            (
                "--pv-recycler-timeout-increment-hostpath",
                &self.pv_recycler_timeout_increment_hostpath,
            ),
        ]
        .into_iter()
        .filter(|(_, v)| v.is_some())
        .map(|(f, _)| f)
        .collect()
    }

    /// Refuse what coxswain does not support and warn about deprecated flags.
    fn check_volume_flags(&self) -> anyhow::Result<()> {
        let recycler = self.pv_recycler_flags();
        if !recycler.is_empty() {
            anyhow::bail!(
                "{} not supported: the Recycle reclaim policy is deprecated (use dynamic provisioning instead) and coxswain has no volume recycler; PersistentVolumes with persistentVolumeReclaimPolicy Recycle turn Failed with VolumeFailedRecycle",
                if recycler.len() == 1 {
                    format!("{} is", recycler[0])
                } else {
                    format!("{} are", recycler.join(", "))
                }
            );
        }
        if self.enable_host_path_provisioner {
            tracing::warn!("Flag --enable-hostpath-provisioner has been deprecated, This flag is deprecated and will be deleted.");
        }
        if !self.volume_host_cidr_denylist.is_empty() || !self.volume_host_allow_local_loopback {
            tracing::warn!("Flags --volume-host-cidr-denylist and --volume-host-allow-local-loopback are currently no-op and will be deleted.");
        }
        Ok(())
    }

    fn config(&self) -> anyhow::Result<ControllerManagerConfig> {
        self.check_volume_flags()?;
        let root_ca = match &self.root_ca_file {
            Some(path) => Some(
                coxswain_controllers::rootcacertpublisher::read_root_ca_file(path)
                    .map_err(anyhow::Error::msg)?,
            ),
            None => None,
        };
        Ok(ControllerManagerConfig {
            controllers: self.controllers.clone(),
            leader_elect: self.leader_elect,
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
            lease_name: self.leader_elect_resource_name.clone(),
            lease_namespace: self.leader_elect_resource_namespace.clone(),
            kube_api_qps: self.kube_api_qps,
            kube_api_burst: self.kube_api_burst,
            min_resync_period: self.min_resync_period,
            controller_start_interval: self.controller_start_interval,
            use_service_account_credentials: self.use_service_account_credentials.unwrap_or(false),
            options: self.controller_options(root_ca),
            ..ControllerManagerConfig::default()
        })
    }
}

/// A Go `time.ParseDuration` string: `1h2m3.5s`, `300ms`, `0`.
fn go_duration(s: &str) -> Result<Duration, String> {
    apimachinery::duration::parse_std(s)
}

/// The connection of a kubeconfig file.
async fn kubeconfig_file(path: &std::path::Path) -> anyhow::Result<kube::Config> {
    let kc = Kubeconfig::read_from(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("loading kubeconfig {}", path.display()))
}

/// `--authentication-kubeconfig` and `--authorization-kubeconfig`, when given.
async fn review_kubeconfigs(
    args: &ServingArgs,
    config: &mut ControllerManagerConfig,
) -> anyhow::Result<()> {
    if let Some(path) = &args.authentication_kubeconfig {
        config.authentication_kubeconfig = Some(
            kubeconfig_file(path)
                .await
                .context("--authentication-kubeconfig")?,
        );
    }
    if let Some(path) = &args.authorization_kubeconfig {
        config.authorization_kubeconfig = Some(
            kubeconfig_file(path)
                .await
                .context("--authorization-kubeconfig")?,
        );
    }
    Ok(())
}

async fn kube_config(args: &Args) -> anyhow::Result<kube::Config> {
    let mut config = match &args.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .context("loading the kubeconfig")?
        }
        None if args.master.is_some() => kube::Config::new(
            args.master
                .as_deref()
                .unwrap_or_default()
                .parse()
                .context("parsing --master")?,
        ),
        None => {
            tracing::warn!("neither --kubeconfig nor --master was specified; using the in-cluster configuration");
            kube::Config::incluster().context("in-cluster configuration")?
        }
    };
    if let (Some(master), Some(_)) = (&args.master, &args.kubeconfig) {
        config.cluster_url = master.parse().context("parsing --master")?;
    }
    Ok(config)
}

/// `coxswain controller-manager`: the process exit status.
pub async fn run(command: Command) -> anyhow::Result<i32> {
    let Command { args, serving } = command;
    let kube = kube_config(&args).await?;
    let mut config = args.config()?;
    serving.apply(&mut config)?;
    review_kubeconfigs(&serving, &mut config).await?;
    let registry = coxswain_controllers::builtin();
    let cancel = coxswain_runtime::manager::shutdown_signal();
    match controller_manager::run(kube, &config, &registry, cancel, |l| {
        if let Some(addr) = l.metrics {
            tracing::info!(%addr, "serving securely health and metrics");
        }
    })
    .await
    {
        Ok(()) => Ok(0),
        Err(e) => {
            tracing::error!(error = %e, "controller manager stopped");
            eprintln!("error: {e}");
            Ok(e.exit_code())
        }
    }
}

/// The controller manager of `coxswain up`: the controllers and options `args` select
/// (`--controllers`, each controller's flags, `--root-ca-file`) against the embedded
/// server; the connection (`--kubeconfig`, `--master`), leader election, the client
/// rate limit and the address are the embedded cluster's own: no leader election, no
/// client rate limit (the server is in-process), health and metrics on a free loopback
/// port (sent on `listening`), served over HTTPS (self-signed) with delegated
/// authentication and authorization by the embedded server, as the secure port's
/// defaults.
pub async fn run_in_process(
    args: Args,
    kubeconfig: PathBuf,
    cancel: tokio_util::sync::CancellationToken,
    listening: tokio::sync::oneshot::Sender<Option<std::net::SocketAddr>>,
) -> Result<(), controller_manager::ControllerManagerError> {
    let flags = match args.config() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "controller manager flags");
            let _ = listening.send(None);
            return Ok(());
        }
    };
    let kc = match Kubeconfig::read_from(&kubeconfig) {
        Ok(kc) => kc,
        Err(e) => {
            tracing::error!(error = %e, "reading the kubeconfig of the embedded server");
            let _ = listening.send(None);
            return Ok(());
        }
    };
    let kube = match kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await {
        Ok(k) => k,
        Err(e) => {
            tracing::error!(error = %e, "loading the kubeconfig of the embedded server");
            let _ = listening.send(None);
            return Ok(());
        }
    };
    let config = ControllerManagerConfig {
        controllers: flags.controllers,
        controller_start_interval: flags.controller_start_interval,
        use_service_account_credentials: flags.use_service_account_credentials,
        options: flags.options,
        leader_elect: false,
        kube_api_qps: 0.0,
        min_resync_period: Duration::ZERO,
        ..ControllerManagerConfig::default()
    };
    let registry = coxswain_controllers::builtin();
    let result = controller_manager::run_with_address(
        kube,
        &config,
        &registry,
        cancel,
        "127.0.0.1:0",
        move |l| {
            let _ = listening.send(l.metrics);
        },
    )
    .await;
    if let Err(e) = &result {
        tracing::error!(error = %e, "controller manager stopped");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(go_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(go_duration("12h0m0s"), Ok(Duration::from_secs(12 * 3600)));
        assert_eq!(go_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(go_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(go_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(go_duration("0"), Ok(Duration::ZERO));
        assert!(go_duration("15").is_err());
        assert!(go_duration("5x").is_err());
        assert!(go_duration("").is_err());
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn options(flags: &[&str]) -> ControllerManagerOptions {
        use clap::Parser;
        let argv = std::iter::once("controller-manager").chain(flags.iter().copied());
        Cli::try_parse_from(argv)
            .expect("flags parse")
            .args
            .controller_options(None)
    }

    #[test]
    fn service_account_flags() {
        use clap::Parser;
        let o = options(&[]);
        assert_eq!(o.service_account.concurrent_sa_token_syncs, 5);
        assert_eq!(o.service_account.service_account_key_file, None);
        assert_eq!(
            o.legacy_sa_token_cleaner.clean_up_period,
            Duration::from_secs(365 * 24 * 3600)
        );
        let o = options(&[
            "--service-account-private-key-file=/etc/sa.key",
            "--concurrent-serviceaccount-token-syncs=2",
            "--legacy-service-account-token-clean-up-period=24h",
        ]);
        assert_eq!(
            o.service_account.service_account_key_file.as_deref(),
            Some(std::path::Path::new("/etc/sa.key"))
        );
        assert_eq!(o.service_account.concurrent_sa_token_syncs, 2);
        assert_eq!(
            o.legacy_sa_token_cleaner.clean_up_period,
            Duration::from_secs(24 * 3600)
        );
        let parse = |flags: &[&str]| {
            let argv = std::iter::once("controller-manager").chain(flags.iter().copied());
            Cli::try_parse_from(argv).expect("flags parse").args
        };
        let config = |flags: &[&str]| parse(flags).config().expect("a configuration");
        assert!(!config(&[]).use_service_account_credentials);
        assert!(config(&["--use-service-account-credentials"]).use_service_account_credentials);
        assert!(
            !config(&["--use-service-account-credentials=false"]).use_service_account_credentials
        );
    }

    #[test]
    fn batch_controller_flags() {
        let o = options(&[]);
        assert_eq!(o.cronjob.concurrent_cron_job_syncs, 5);
        assert_eq!(o.ttl_after_finished.concurrent_ttl_syncs, 5);
        assert_eq!(o.podgc.terminated_pod_gc_threshold, 12500);
        let o = options(&[
            "--concurrent-cron-job-syncs=7",
            "--concurrent-ttl-after-finished-syncs",
            "3",
            "--terminated-pod-gc-threshold",
            "-1",
        ]);
        assert_eq!(o.cronjob.concurrent_cron_job_syncs, 7);
        assert_eq!(o.ttl_after_finished.concurrent_ttl_syncs, 3);
        assert_eq!(o.podgc.terminated_pod_gc_threshold, -1);
    }

    #[test]
    fn endpoint_controller_flags() {
        let o = options(&[]);
        assert_eq!(o.endpoint.concurrent_endpoint_syncs, 5);
        assert_eq!(o.endpoint.endpoint_updates_batch_period, Duration::ZERO);
        assert_eq!(
            o.endpointslice_mirroring.concurrent_service_endpoint_syncs,
            5
        );
        assert_eq!(o.endpointslice_mirroring.max_endpoints_per_subset, 1000);
        let o = options(&[
            "--concurrent-endpoint-syncs=3",
            "--endpoint-updates-batch-period=500ms",
            "--mirroring-concurrent-service-endpoint-syncs=2",
            "--mirroring-max-endpoints-per-subset=100",
            "--mirroring-endpointslice-updates-batch-period=1s",
        ]);
        assert_eq!(o.endpoint.concurrent_endpoint_syncs, 3);
        assert_eq!(
            o.endpoint.endpoint_updates_batch_period,
            Duration::from_millis(500)
        );
        assert_eq!(
            o.endpointslice_mirroring.concurrent_service_endpoint_syncs,
            2
        );
        assert_eq!(o.endpointslice_mirroring.max_endpoints_per_subset, 100);
        assert_eq!(
            o.endpointslice_mirroring.endpoint_updates_batch_period,
            Duration::from_secs(1)
        );
    }

    #[test]
    fn endpointslice_controller_flags() {
        let o = options(&[]);
        assert_eq!(o.endpoint_slice.concurrent_service_endpoint_syncs, 5);
        assert_eq!(o.endpoint_slice.max_endpoints_per_slice, 100);
        assert_eq!(
            o.endpoint_slice.endpoint_updates_batch_period,
            Duration::ZERO
        );
        let o = options(&[
            "--concurrent-service-endpoint-syncs=2",
            "--max-endpoints-per-slice",
            "500",
            "--endpointslice-updates-batch-period=1s",
        ]);
        assert_eq!(o.endpoint_slice.concurrent_service_endpoint_syncs, 2);
        assert_eq!(o.endpoint_slice.max_endpoints_per_slice, 500);
        assert_eq!(
            o.endpoint_slice.endpoint_updates_batch_period,
            Duration::from_secs(1)
        );
    }

    #[test]
    fn csr_signing_flags() {
        let o = options(&[]).csr_signing;
        assert_eq!(o.duration, Duration::from_secs(8760 * 3600));
        assert!(o.signer_files().unwrap().is_empty());
        let o = options(&[
            "--cluster-signing-cert-file=/ca.crt",
            "--cluster-signing-key-file=/ca.key",
            "--cluster-signing-duration=1h",
        ])
        .csr_signing;
        assert_eq!(o.duration, Duration::from_secs(3600));
        let files = o.signer_files().unwrap();
        assert_eq!(files.len(), 4, "every signer uses the cluster CA");
        assert!(files
            .iter()
            .all(|(_, f)| f.cert_file.as_deref() == Some(std::path::Path::new("/ca.crt"))));
        let o = options(&[
            "--cluster-signing-kube-apiserver-client-cert-file=/c.crt",
            "--cluster-signing-kube-apiserver-client-key-file=/c.key",
        ])
        .csr_signing;
        let files = o.signer_files().unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, "kubernetes.io/kube-apiserver-client");
        let o = options(&[
            "--cluster-signing-cert-file=/ca.crt",
            "--cluster-signing-key-file=/ca.key",
            "--cluster-signing-kubelet-serving-cert-file=/s.crt",
        ])
        .csr_signing;
        assert_eq!(
            o.signer_files().unwrap_err(),
            "cannot specify default and per controller certs at the same time"
        );
    }

    #[test]
    fn volume_controller_flags() {
        let o = options(&[]);
        assert_eq!(o.ephemeral_volume.concurrent_ephemeral_volume_syncs, 5);
        let o = options(&["--concurrent-ephemeralvolume-syncs", "2"]);
        assert_eq!(o.ephemeral_volume.concurrent_ephemeral_volume_syncs, 2);
        let o = options(&[]).attach_detach;
        assert_eq!(o.reconciler_sync_loop_period, Duration::from_secs(60));
        assert!(!o.disable_attach_detach_reconciler_sync);
        assert!(!o.disable_force_detach_on_timeout);
        let o = options(&[
            "--attach-detach-reconcile-sync-period=30s",
            "--disable-attach-detach-reconcile-sync",
            "--disable-force-detach-on-timeout=true",
        ])
        .attach_detach;
        assert_eq!(o.reconciler_sync_loop_period, Duration::from_secs(30));
        assert!(o.disable_attach_detach_reconciler_sync);
        assert!(o.disable_force_detach_on_timeout);
        // upstream's validation: more than a second
        let o = options(&["--attach-detach-reconcile-sync-period=500ms"]).attach_detach;
        assert_eq!(
            o.validate(),
            Err("duration time must be greater than one second as set via command line option reconcile-sync-loop-period".into())
        );
    }

    #[test]
    fn node_lifecycle_flags() {
        let o = options(&[]).node_lifecycle;
        assert_eq!(o.node_monitor_period, Duration::from_secs(5));
        assert_eq!(o.node_monitor_grace_period, Duration::from_secs(50));
        assert_eq!(o.node_startup_grace_period, Duration::from_secs(60));
        assert_eq!(o.node_eviction_rate, 0.1);
        assert_eq!(o.secondary_node_eviction_rate, 0.01);
        assert_eq!(o.large_cluster_size_threshold, 50);
        assert_eq!(o.unhealthy_zone_threshold, 0.55);
        let o = options(&[
            "--node-monitor-period=1s",
            "--node-monitor-grace-period=8s",
            "--node-startup-grace-period=20s",
            "--node-eviction-rate=2",
            "--secondary-node-eviction-rate=0.5",
            "--large-cluster-size-threshold=3",
            "--unhealthy-zone-threshold=0.3",
        ])
        .node_lifecycle;
        assert_eq!(o.node_monitor_period, Duration::from_secs(1));
        assert_eq!(o.node_monitor_grace_period, Duration::from_secs(8));
        assert_eq!(o.node_startup_grace_period, Duration::from_secs(20));
        assert_eq!(o.node_eviction_rate, 2.0);
        assert_eq!(o.secondary_node_eviction_rate, 0.5);
        assert_eq!(o.large_cluster_size_threshold, 3);
        assert_eq!(o.unhealthy_zone_threshold, 0.3);
    }

    #[test]
    fn resource_quota_flags() {
        let o = options(&[]).resource_quota;
        assert_eq!(o.concurrent_resource_quota_syncs, 5);
        assert_eq!(o.resource_quota_sync_period, Duration::from_secs(300));
        let o = options(&[
            "--concurrent-resource-quota-syncs=2",
            "--resource-quota-sync-period=30s",
        ])
        .resource_quota;
        assert_eq!(o.concurrent_resource_quota_syncs, 2);
        assert_eq!(o.resource_quota_sync_period, Duration::from_secs(30));
    }

    #[test]
    fn horizontal_pod_autoscaler_flags() {
        let o = options(&[]).hpa;
        assert_eq!(o.sync_period, Duration::from_secs(15));
        assert_eq!(o.tolerance, 0.1);
        assert_eq!(o.downscale_stabilization_window, Duration::from_secs(300));
        assert_eq!(o.cpu_initialization_period, Duration::from_secs(300));
        assert_eq!(o.initial_readiness_delay, Duration::from_secs(30));
        assert_eq!(o.concurrent_syncs, 5);
        let o = options(&[
            "--horizontal-pod-autoscaler-sync-period=1s",
            "--horizontal-pod-autoscaler-tolerance=0.05",
            "--horizontal-pod-autoscaler-downscale-stabilization=1m",
            "--horizontal-pod-autoscaler-cpu-initialization-period=10s",
            "--horizontal-pod-autoscaler-initial-readiness-delay=2s",
            "--concurrent-horizontal-pod-autoscaler-syncs=2",
        ])
        .hpa;
        assert_eq!(o.sync_period, Duration::from_secs(1));
        assert_eq!(o.tolerance, 0.05);
        assert_eq!(o.downscale_stabilization_window, Duration::from_secs(60));
        assert_eq!(o.cpu_initialization_period, Duration::from_secs(10));
        assert_eq!(o.initial_readiness_delay, Duration::from_secs(2));
        assert_eq!(o.concurrent_syncs, 2);
    }
}

#[cfg(test)]
mod flag_tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn concurrent_job_syncs_reaches_the_job_controller() {
        let cli = Cli::parse_from(["kcm"]);
        assert_eq!(
            cli.args.controller_options(None).job.concurrent_job_syncs,
            5
        );
        let cli = Cli::parse_from(["kcm", "--concurrent-job-syncs", "7"]);
        assert_eq!(
            cli.args.controller_options(None).job.concurrent_job_syncs,
            7
        );
    }
}

#[cfg(test)]
mod node_ipam_flag_tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn node_ipam_flags_reach_the_controller() {
        let o = Cli::parse_from(["kcm"]).args.controller_options(None);
        assert!(!o.node_ipam.allocate_node_cidrs);
        assert_eq!(o.node_ipam.cluster_cidr, "");
        let o = Cli::parse_from([
            "kcm",
            "--allocate-node-cidrs",
            "--cluster-cidr=10.244.0.0/16,fd00::/48",
            "--service-cluster-ip-range",
            "10.96.0.0/12",
            "--node-cidr-mask-size-ipv4=26",
            "--node-cidr-mask-size-ipv6=72",
        ])
        .args
        .controller_options(None);
        assert!(o.node_ipam.allocate_node_cidrs);
        assert_eq!(o.node_ipam.cluster_cidr, "10.244.0.0/16,fd00::/48");
        assert_eq!(o.node_ipam.service_cluster_ip_range, "10.96.0.0/12");
        assert_eq!(
            (
                o.node_ipam.node_cidr_mask_size_ipv4,
                o.node_ipam.node_cidr_mask_size_ipv6
            ),
            (26, 72)
        );
    }
}

#[cfg(test)]
mod volume_binder_flag_tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn args(flags: &[&str]) -> Args {
        let argv = std::iter::once("kcm").chain(flags.iter().copied());
        Cli::try_parse_from(argv).expect("flags parse").args
    }

    #[test]
    fn binder_flags_reach_its_options() {
        let o = args(&[]).controller_options(None).persistent_volume_binder;
        assert_eq!(o.pv_claim_binder_sync_period, Duration::from_secs(15));
        assert!(o.enable_dynamic_provisioning);
        assert!(!o.enable_host_path_provisioner);
        assert_eq!(
            o.flex_volume_plugin_dir,
            "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"
        );
        assert!(o.volume_host_allow_local_loopback);
        let a = args(&[
            "--pvclaimbinder-sync-period=1m30s",
            "--enable-dynamic-provisioning=false",
            "--enable-hostpath-provisioner",
            "--flex-volume-plugin-dir=/opt/flex",
            "--volume-host-cidr-denylist=10.0.0.0/8,127.0.0.0/8",
            "--volume-host-allow-local-loopback=false",
        ]);
        let o = a.controller_options(None).persistent_volume_binder;
        assert_eq!(o.pv_claim_binder_sync_period, Duration::from_secs(90));
        assert!(!o.enable_dynamic_provisioning);
        assert!(o.enable_host_path_provisioner);
        assert_eq!(o.flex_volume_plugin_dir, "/opt/flex");
        assert_eq!(o.volume_host_cidr_denylist, ["10.0.0.0/8", "127.0.0.0/8"]);
        assert!(!o.volume_host_allow_local_loopback);
        // deprecated but accepted
        assert!(a.config().is_ok());
    }

    #[test]
    fn recycler_flags_are_refused_as_deprecated() {
        let err = args(&["--pv-recycler-minimum-timeout-nfs=300"])
            .config()
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--pv-recycler-minimum-timeout-nfs is not supported: the Recycle reclaim policy is deprecated"),
            "{err}"
        );
        let err = args(&[
            "--pv-recycler-pod-template-filepath-hostpath=/x.yaml",
            "--pv-recycler-timeout-increment-hostpath",
            "30",
        ])
        .config()
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("--pv-recycler-pod-template-filepath-hostpath, --pv-recycler-timeout-increment-hostpath are not supported"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_sync_period_is_refused() {
        let argv = ["kcm", "--pvclaimbinder-sync-period=15"];
        assert!(
            Cli::try_parse_from(argv).is_err(),
            "a Go duration needs a unit"
        );
    }
}

#[cfg(test)]
mod secure_serving_flag_tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        command: Command,
    }

    /// The configuration `coxswain controller-manager` runs with.
    struct Flags(Command);

    impl Flags {
        fn config(&self) -> anyhow::Result<ControllerManagerConfig> {
            let mut config = self.0.args.config()?;
            self.0.serving.apply(&mut config)?;
            Ok(config)
        }
    }

    fn args(flags: &[&str]) -> Flags {
        let argv = std::iter::once("kcm").chain(flags.iter().copied());
        Flags(Cli::try_parse_from(argv).expect("flags parse").command)
    }

    #[test]
    fn defaults_are_kube_controller_managers() {
        let c = args(&[]).config().expect("config");
        assert_eq!(c.bind_address, IpAddr::from([0, 0, 0, 0]));
        assert_eq!(c.secure_port, 10257);
        assert_eq!(c.serving.certificate, ServingCertificate::SelfSigned);
        assert_eq!(c.serving.client_ca_file, None);
        assert_eq!(c.auth, DelegatingAuthOptions::default());
        assert!(c.auth.anonymous);
        assert_eq!(c.auth.token_cache_ttl, Duration::from_secs(10));
        assert_eq!(c.auth.allow_cache_ttl, Duration::from_secs(10));
        assert_eq!(c.auth.deny_cache_ttl, Duration::from_secs(10));
        assert_eq!(c.auth.always_allow_paths, ["/healthz", "/readyz", "/livez"]);
        assert_eq!(c.auth.always_allow_groups, ["system:masters"]);
        assert!(!c.authentication_skip_lookup);
        assert!(!c.authentication_tolerate_lookup_failure);
        assert!(c.authentication_kubeconfig.is_none() && c.authorization_kubeconfig.is_none());
    }

    #[test]
    fn serving_and_auth_flags_reach_the_config() {
        let c = args(&[
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--tls-cert-file=/pki/kcm.crt",
            "--tls-private-key-file",
            "/pki/kcm.key",
            "--cert-dir=/ignored",
            "--client-ca-file=/pki/ca.crt",
            "--authentication-skip-lookup",
            "--authentication-tolerate-lookup-failure=true",
            "--authentication-token-webhook-cache-ttl=1m",
            "--authorization-always-allow-paths=/healthz,/metrics",
            "--authorization-webhook-cache-authorized-ttl=30s",
            "--authorization-webhook-cache-unauthorized-ttl=0s",
        ])
        .config()
        .expect("config");
        assert_eq!(c.bind_address, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(c.secure_port, 0);
        assert_eq!(
            c.serving.certificate,
            ServingCertificate::Files {
                cert: "/pki/kcm.crt".into(),
                key: "/pki/kcm.key".into()
            }
        );
        assert_eq!(c.serving.client_ca_file, Some("/pki/ca.crt".into()));
        assert!(c.authentication_skip_lookup && c.authentication_tolerate_lookup_failure);
        assert_eq!(c.auth.token_cache_ttl, Duration::from_secs(60));
        assert_eq!(c.auth.always_allow_paths, ["/healthz", "/metrics"]);
        assert_eq!(c.auth.allow_cache_ttl, Duration::from_secs(30));
        assert_eq!(c.auth.deny_cache_ttl, Duration::ZERO);
        // an empty list lets no path through without a review
        let c = args(&["--authorization-always-allow-paths="])
            .config()
            .expect("config");
        assert!(c.auth.always_allow_paths.is_empty());
    }

    #[test]
    fn cert_dir_keeps_a_generated_pair_under_upstreams_names() {
        let c = args(&["--cert-dir", "/var/run/kubernetes"])
            .config()
            .expect("config");
        assert_eq!(
            c.serving.certificate,
            ServingCertificate::SelfSignedIn {
                cert: "/var/run/kubernetes/kube-controller-manager.crt".into(),
                key: "/var/run/kubernetes/kube-controller-manager.key".into(),
            }
        );
    }

    #[test]
    fn a_certificate_needs_its_key() {
        let err = args(&["--tls-cert-file=/pki/kcm.crt"])
            .config()
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--tls-cert-file and --tls-private-key-file must be given together"
        );
        assert!(
            Cli::try_parse_from(["kcm", "--authentication-token-webhook-cache-ttl=10"]).is_err()
        );
    }
}
