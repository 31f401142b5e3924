//! The CSR signing controller: kube-controller-manager's
//! `certificatesigningrequest-signing-controller` (upstream
//! `pkg/controller/certificates/signer` and `.../authority`).
//!
//! One controller serves the four `kubernetes.io` signers
//! (`kube-apiserver-client`, `kube-apiserver-client-kubelet`, `kubelet-serving`,
//! `legacy-unknown`), each with the CA of its `--cluster-signing-<signer>-cert-file` and
//! `-key-file`, else of `--cluster-signing-cert-file`/`--cluster-signing-key-file`; a
//! signer without a CA is not run. An approved request of a signer that runs, not
//! failed and without a certificate, is checked with the signer's rules (a request the
//! signer refuses gets the `Failed` condition, reason `SignerValidationFailure`) and
//! signed: the request's subject and alternative names, the requested usages, no other
//! extension, not a CA, valid from five minutes ago for
//! `min(--cluster-signing-duration, spec.expirationSeconds)` (at least ten minutes),
//! never past the CA's own expiry.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::manager::Runnable;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::ByteString;
use kube::api::PostParams;
use kube::Api;

use super::{
    certificate, has_condition, is_approved, is_request_for_signer, parse_request, KUBELET_SERVING,
    KUBE_APISERVER_CLIENT, KUBE_APISERVER_CLIENT_KUBELET, LEGACY_UNKNOWN,
};
use crate::registry::{ControllerContext, Descriptor};

/// Canonical controller name.
pub const NAME: &str = "certificatesigningrequest-signing-controller";
/// Upstream's backdating of a certificate's validity (clock skew).
pub const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// Certificates shorter than this are not backdated at their end.
pub const SHORT: Duration = Duration::from_secs(8 * 3600);
/// The shortest lifetime a requested `expirationSeconds` gets.
pub const MIN_DURATION: Duration = Duration::from_secs(10 * 60);
/// `--cluster-signing-duration`'s default (8760h).
pub const DEFAULT_DURATION: Duration = Duration::from_secs(8760 * 3600);

/// A signer's CA files (`--cluster-signing-<signer>-cert-file`, `-key-file`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignerFiles {
    /// The CA certificate (PEM).
    pub cert_file: Option<PathBuf>,
    /// The CA private key (PEM, PKCS#8).
    pub key_file: Option<PathBuf>,
}

impl SignerFiles {
    fn any(&self) -> bool {
        self.cert_file.is_some() || self.key_file.is_some()
    }
}

/// The signing controller's options (upstream `CSRSigningControllerConfiguration`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsrSigningControllerOptions {
    /// `--cluster-signing-cert-file` and `--cluster-signing-key-file`: the CA of every
    /// signer without its own.
    pub cluster_signing: SignerFiles,
    /// `--cluster-signing-kubelet-serving-cert-file`/`-key-file`.
    pub kubelet_serving: SignerFiles,
    /// `--cluster-signing-kubelet-client-cert-file`/`-key-file`.
    pub kubelet_client: SignerFiles,
    /// `--cluster-signing-kube-apiserver-client-cert-file`/`-key-file`.
    pub kube_apiserver_client: SignerFiles,
    /// `--cluster-signing-legacy-unknown-cert-file`/`-key-file`.
    pub legacy_unknown: SignerFiles,
    /// `--cluster-signing-duration`: the longest lifetime of an issued certificate.
    pub duration: Duration,
}

impl Default for CsrSigningControllerOptions {
    fn default() -> Self {
        CsrSigningControllerOptions {
            cluster_signing: SignerFiles::default(),
            kubelet_serving: SignerFiles::default(),
            kubelet_client: SignerFiles::default(),
            kube_apiserver_client: SignerFiles::default(),
            legacy_unknown: SignerFiles::default(),
            duration: DEFAULT_DURATION,
        }
    }
}

impl CsrSigningControllerOptions {
    /// The CA files of each signer, as upstream picks them: a signer's own files when
    /// any of them is set, else the cluster signing files; signers with neither are
    /// left out. Setting both the cluster files and a signer's own is an error.
    pub fn signer_files(&self) -> Result<Vec<(&'static str, SignerFiles)>, String> {
        let specific = [
            (KUBELET_SERVING, &self.kubelet_serving),
            (KUBE_APISERVER_CLIENT_KUBELET, &self.kubelet_client),
            (KUBE_APISERVER_CLIENT, &self.kube_apiserver_client),
            (LEGACY_UNKNOWN, &self.legacy_unknown),
        ];
        let single =
            self.cluster_signing.cert_file.is_some() && self.cluster_signing.key_file.is_some();
        let any_specific = specific.iter().any(|(_, f)| f.any());
        if single && any_specific {
            return Err("cannot specify default and per controller certs at the same time".into());
        }
        Ok(specific
            .into_iter()
            .filter_map(|(name, own)| {
                let files = if own.any() {
                    own.clone()
                } else {
                    self.cluster_signing.clone()
                };
                files.any().then_some((name, files))
            })
            .collect())
    }
}

/// The service account the controller runs as with `--use-service-account-credentials`
/// (upstream `ClientOrDie("certificate-controller")`).
pub const SERVICE_ACCOUNT: &str = "certificate-controller";

/// The registry entry: `certificatesigningrequest-signing-controller`, alias
/// `csrsigning`, on by default.
pub fn descriptor() -> Descriptor {
    Descriptor {
        name: NAME,
        aliases: &["csrsigning"],
        disabled_by_default: false,
        constructor: construct,
    }
}

fn construct(ctx: &ControllerContext<'_>) -> Result<Option<Box<dyn Runnable>>, String> {
    let opts = &ctx.options.csr_signing;
    let files = opts.signer_files()?;
    if files.is_empty() {
        tracing::info!("Skipping CSR signer controller because no csr cert/key was specified");
        return Ok(None);
    }
    let mut signers = BTreeMap::new();
    for (name, f) in files {
        let ca = CertificateAuthority::load(&f)
            .map_err(|e| format!("failed to start {name} certificate controller: {e}"))?;
        signers.insert(name.to_string(), Arc::new(ca));
    }
    Ok(Some(Box::new(new_controller(
        &ctx.clients(SERVICE_ACCOUNT)?,
        signers,
        opts.duration,
    ))))
}

/// A CA that signs certificates (upstream `authority.CertificateAuthority`).
pub struct CertificateAuthority {
    cert_pem: String,
    key_pem: String,
    /// The CA certificate's `notAfter` (Unix seconds).
    not_after: i64,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl CertificateAuthority {
    /// The CA of a certificate file and a key file.
    pub fn load(files: &SignerFiles) -> Result<CertificateAuthority, String> {
        let read = |p: &Option<PathBuf>, what: &str| -> Result<String, String> {
            let p = p.as_ref().ok_or_else(|| format!("no {what} file given"))?;
            std::fs::read_to_string(p).map_err(|e| format!("error reading {}: {e}", p.display()))
        };
        CertificateAuthority::from_pem(
            &read(&files.cert_file, "certificate")?,
            &read(&files.key_file, "key")?,
        )
    }

    /// The CA of a PEM certificate and PEM (PKCS#8) key.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<CertificateAuthority, String> {
        let (_, not_after) = apimachinery::x509::first_certificate_validity(cert_pem.as_bytes())
            .ok_or(
            "error reading CA cert file: data does not contain any valid RSA or ECDSA certificates",
        )?;
        rcgen::KeyPair::from_pem(key_pem).map_err(|e| format!("error reading CA key file: {e}"))?;
        rcgen::Issuer::from_ca_cert_pem(
            cert_pem,
            rcgen::KeyPair::from_pem(key_pem).map_err(|e| e.to_string())?,
        )
        .map_err(|e| format!("error reading CA cert file: {e}"))?;
        Ok(CertificateAuthority {
            cert_pem: cert_pem.to_string(),
            key_pem: key_pem.to_string(),
            not_after,
        })
    }

    /// A certificate (PEM) for the request `csr_der` with `usages`, valid for `ttl` from
    /// `now` (Unix seconds) as upstream's `PermissiveSigningPolicy` (backdated by
    /// [`BACKDATE`], end backdated too unless shorter than [`SHORT`], never past the
    /// CA's expiry).
    pub fn sign(
        &self,
        csr_der: &[u8],
        usages: &[String],
        ttl: Duration,
        now: i64,
    ) -> Result<String, String> {
        let pem = apimachinery::pem::encode(apimachinery::x509::CERTIFICATE_REQUEST_BLOCK, csr_der);
        let mut req = rcgen::CertificateSigningRequestParams::from_pem(&pem)
            .map_err(|e| format!("unable to verify certificate request signature: {e}"))?;
        let (key_usages, ext_usages) = key_usages(usages)?;
        let (not_before, mut not_after) = validity(ttl, now);
        if not_after >= self.not_after {
            not_after = self.not_after;
        }
        if not_before >= self.not_after {
            return Err(format!(
                "the signer has expired: NotAfter={}",
                self.not_after
            ));
        }
        if now >= self.not_after {
            return Err(format!(
                "refusing to sign a certificate that expired in the past: NotAfter={}",
                self.not_after
            ));
        }
        let p = &mut req.params;
        p.not_before =
            time::OffsetDateTime::from_unix_timestamp(not_before).map_err(|e| e.to_string())?;
        p.not_after =
            time::OffsetDateTime::from_unix_timestamp(not_after).map_err(|e| e.to_string())?;
        let mut serial: [u8; 16] = rand::random();
        serial[0] &= 0x7f;
        p.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
        p.key_usages = key_usages;
        p.extended_key_usages = ext_usages;
        p.is_ca = rcgen::IsCa::ExplicitNoCa;
        p.custom_extensions.clear();
        p.name_constraints = None;
        p.crl_distribution_points.clear();
        p.use_authority_key_identifier_extension = true;
        let key = rcgen::KeyPair::from_pem(&self.key_pem).map_err(|e| e.to_string())?;
        let issuer =
            rcgen::Issuer::from_ca_cert_pem(&self.cert_pem, key).map_err(|e| e.to_string())?;
        let cert = req.signed_by(&issuer).map_err(|e| e.to_string())?;
        Ok(cert.pem())
    }
}

/// `notBefore` and `notAfter` (Unix seconds) of a certificate of `ttl` signed at `now`.
pub fn validity(ttl: Duration, now: i64) -> (i64, i64) {
    let secs = |d: Duration| i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2);
    let not_before = now - secs(BACKDATE);
    let not_after = if ttl < SHORT {
        now.saturating_add(secs(ttl))
    } else {
        now.saturating_add(secs(ttl) - secs(BACKDATE))
    };
    (not_before, not_after)
}

/// The lifetime of a certificate for a request asking `expiration_seconds` from a
/// signer whose longest is `cert_ttl` (upstream `signer.duration`).
pub fn duration(cert_ttl: Duration, expiration_seconds: Option<i32>) -> Duration {
    let Some(secs) = expiration_seconds else {
        return cert_ttl;
    };
    let requested = Duration::from_secs(u64::try_from(secs).unwrap_or(0));
    if requested > cert_ttl {
        cert_ttl
    } else if requested < MIN_DURATION {
        MIN_DURATION
    } else {
        requested
    }
}

type Usages = (
    Vec<rcgen::KeyUsagePurpose>,
    Vec<rcgen::ExtendedKeyUsagePurpose>,
);

/// Upstream `keyUsagesFromStrings`: the key usages and extended key usages of the
/// requested usages; unknown ones are an error.
pub fn key_usages(usages: &[String]) -> Result<Usages, String> {
    use rcgen::ExtendedKeyUsagePurpose as E;
    use rcgen::KeyUsagePurpose as K;
    let mut ku: Vec<K> = Vec::new();
    let mut eku: Vec<E> = Vec::new();
    let mut unknown = Vec::new();
    for u in usages {
        let k = match u.as_str() {
            "signing" | "digital signature" => Some(K::DigitalSignature),
            "content commitment" => Some(K::ContentCommitment),
            "key encipherment" => Some(K::KeyEncipherment),
            "key agreement" => Some(K::KeyAgreement),
            "data encipherment" => Some(K::DataEncipherment),
            "cert sign" => Some(K::KeyCertSign),
            "crl sign" => Some(K::CrlSign),
            "encipher only" => Some(K::EncipherOnly),
            "decipher only" => Some(K::DecipherOnly),
            _ => None,
        };
        let e = match u.as_str() {
            "any" => Some(E::Any),
            "server auth" => Some(E::ServerAuth),
            "client auth" => Some(E::ClientAuth),
            "code signing" => Some(E::CodeSigning),
            "email protection" | "s/mime" => Some(E::EmailProtection),
            "ipsec end system" => Some(E::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 5])),
            "ipsec tunnel" => Some(E::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 6])),
            "ipsec user" => Some(E::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 7])),
            "timestamping" => Some(E::TimeStamping),
            "ocsp signing" => Some(E::OcspSigning),
            "microsoft sgc" => Some(E::Other(vec![1, 3, 6, 1, 4, 1, 311, 10, 3, 3])),
            "netscape sgc" => Some(E::Other(vec![2, 16, 840, 1, 113_730, 4, 1])),
            _ => None,
        };
        match (k, e) {
            (Some(k), _) => {
                if !ku.contains(&k) {
                    ku.push(k);
                }
            }
            (None, Some(e)) => {
                if !eku.contains(&e) {
                    eku.push(e);
                }
            }
            (None, None) => unknown.push(apimachinery::gofmt::quote(u)),
        }
    }
    if !unknown.is_empty() {
        return Err(format!(
            "unrecognized usage values: [{}]",
            unknown.join(" ")
        ));
    }
    Ok((ku, eku))
}

/// The signing controller as a runnable of `mgr`: `signers` maps signer names to CAs.
pub fn new_controller(
    mgr: &impl crate::clientbuilder::ClusterAccess,
    signers: BTreeMap<String, Arc<CertificateAuthority>>,
    cert_ttl: Duration,
) -> Controller<SigningReconciler> {
    let reconciler = SigningReconciler {
        csrs: mgr
            .cache()
            .informer::<CertificateSigningRequest>()
            .store()
            .clone(),
        client: mgr.kube_client().clone(),
        signers,
        cert_ttl,
    };
    ControllerBuilder::new(mgr.cache())
        .named(NAME)
        .with_options(ControllerOptions::workers(5))
        .for_::<CertificateSigningRequest>()
        .build(reconciler)
}

/// What one request needs from a signer.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing (not approved, failed, issued, or not this controller's signer).
    Nothing,
    /// The request is refused: the `Failed` condition's message.
    Fail(String),
    /// Sign it with the CA of this signer.
    Sign,
}

/// Upstream `signer.handle`'s decision for `csr` when `running` names the signers
/// this controller runs.
pub fn decide(csr: &CertificateSigningRequest, running: &[&str]) -> Result<Outcome, String> {
    if certificate(csr).is_some() || !is_approved(csr) || has_condition(csr, "Failed") {
        return Ok(Outcome::Nothing);
    }
    let signer = csr.spec.signer_name.as_str();
    if !running.contains(&signer) {
        return Ok(Outcome::Nothing);
    }
    let name = csr.metadata.name.as_deref().unwrap_or("");
    let req = parse_request(csr).map_err(|e| {
        format!(
            "unable to parse csr {}: {e}",
            apimachinery::gofmt::quote(name)
        )
    })?;
    let usages = csr.spec.usages.clone().unwrap_or_default();
    match is_request_for_signer(signer, &req, &usages, signer) {
        Err(e) => Ok(Outcome::Fail(e)),
        Ok(false) => Ok(Outcome::Nothing),
        Ok(true) => Ok(Outcome::Sign),
    }
}

/// Signs approved requests.
pub struct SigningReconciler {
    csrs: Arc<Store<CertificateSigningRequest>>,
    client: kube::Client,
    signers: BTreeMap<String, Arc<CertificateAuthority>>,
    cert_ttl: Duration,
}

impl Reconciler for SigningReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(csr) = self.csrs.get(&key) else {
            return Ok(Action::Done);
        };
        let running: Vec<&str> = self.signers.keys().map(String::as_str).collect();
        let outcome = decide(&csr, &running).map_err(ReconcileError::msg)?;
        let mut csr = (*csr).clone();
        let status = csr
            .status
            .get_or_insert_with(CertificateSigningRequestStatus::default);
        match outcome {
            Outcome::Nothing => return Ok(Action::Done),
            Outcome::Fail(message) => {
                status.conditions.get_or_insert_with(Vec::new).push(
                    CertificateSigningRequestCondition {
                        type_: "Failed".into(),
                        status: "True".into(),
                        reason: Some("SignerValidationFailure".into()),
                        message: Some(message),
                        last_update_time: Some(Time(k8s_openapi::jiff::Timestamp::now())),
                        ..Default::default()
                    },
                );
            }
            Outcome::Sign => {
                let Some(ca) = self.signers.get(&csr.spec.signer_name) else {
                    return Ok(Action::Done);
                };
                let req = parse_request(&csr).map_err(ReconcileError::msg)?;
                let ttl = duration(self.cert_ttl, csr.spec.expiration_seconds);
                let usages = csr.spec.usages.clone().unwrap_or_default();
                let pem = ca
                    .sign(&req.der, &usages, ttl, chrono::Utc::now().timestamp())
                    .map_err(|e| ReconcileError::msg(format!("error auto signing csr: {e}")))?;
                let status = csr
                    .status
                    .get_or_insert_with(CertificateSigningRequestStatus::default);
                status.certificate = Some(ByteString(pem.into_bytes()));
            }
        }
        Api::<CertificateSigningRequest>::all(self.client.clone())
            .replace_status(key.name(), &PostParams::default(), &csr)
            .await
            .map_err(|e| ReconcileError::from(e).context("updating the csr's status"))?;
        Ok(Action::Done)
    }
}
