//! Service account tokens in the API server: the keys (generated into the data dir or
//! read from `--service-account-signing-key-file` / `--service-account-key-file`), the
//! issuer that signs TokenRequest's tokens, and the authenticators of legacy and bound
//! tokens, which read the objects tokens name from the store.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use apimachinery::serviceaccount::validate::TokenGetter;
use apimachinery::serviceaccount::{PublicKey, SigningKey, TokenAuthenticator, TokenIdentity};
use k8s_openapi::api::core::v1::{Node, Pod, Secret, ServiceAccount};
use serde::de::DeserializeOwned;

use crate::machinery::user::UserInfo;
use crate::storage::store::{object_key, Store};

/// The file of the generated signing key in the data dir (PKCS#8 PEM).
pub const KEY_FILE: &str = "sa.key";
/// The file of its public key (PKIX PEM).
pub const PUB_FILE: &str = "sa.pub";

/// A legacy token's Secret to label as used today: namespace, name, day.
pub type LegacyUse = (String, String, String);

/// Reads the objects tokens name from the store.
pub struct StoreGetter {
    store: Arc<Store>,
    used: Option<tokio::sync::mpsc::UnboundedSender<LegacyUse>>,
}

impl StoreGetter {
    /// A getter over `store`; `used` receives the legacy token Secrets to label.
    pub fn new(
        store: Arc<Store>,
        used: Option<tokio::sync::mpsc::UnboundedSender<LegacyUse>>,
    ) -> StoreGetter {
        StoreGetter { store, used }
    }

    fn get<T: DeserializeOwned>(&self, resource: &str, ns: Option<&str>, name: &str) -> Option<T> {
        let stored = self.store.get(resource, &object_key(ns, name))?;
        serde_json::from_slice(&stored.json).ok()
    }
}

impl TokenGetter for StoreGetter {
    fn service_account(&self, ns: &str, name: &str) -> Option<ServiceAccount> {
        self.get("/serviceaccounts", Some(ns), name)
    }
    fn pod(&self, ns: &str, name: &str) -> Option<Pod> {
        self.get("/pods", Some(ns), name)
    }
    fn secret(&self, ns: &str, name: &str) -> Option<Secret> {
        self.get("/secrets", Some(ns), name)
    }
    fn node(&self, name: &str) -> Option<Node> {
        self.get("/nodes", None, name)
    }
    fn mark_legacy_token_used(&self, secret: &Secret, today: &str) {
        if let Some(tx) = &self.used {
            let _ = tx.send((
                secret.metadata.namespace.clone().unwrap_or_default(),
                secret.metadata.name.clone().unwrap_or_default(),
                today.to_string(),
            ));
        }
    }
}

/// What signs and verifies service account tokens.
pub struct ServiceAccountTokens {
    /// Signs TokenRequest's tokens.
    pub signing_key: SigningKey,
    /// `--service-account-issuer` (the first signs; all are accepted).
    pub issuers: Vec<String>,
    /// `--api-audiences`: the default audiences of a TokenRequest and the audiences
    /// requests to the API server must carry.
    pub api_audiences: Vec<String>,
    /// `--service-account-max-token-expiration` in seconds (0: none).
    pub max_expiration_seconds: i64,
    /// `--service-account-extend-token-expiration`.
    pub extend_expiration: bool,
    /// Keys tokens are verified with (served at `/openid/v1/jwks`).
    pub public_keys: Vec<PublicKey>,
    /// `--service-account-jwks-uri` (default: `https://<server address>/openid/v1/jwks`).
    pub jwks_uri: Option<String>,
    legacy: TokenAuthenticator,
    bound: TokenAuthenticator,
    getter: StoreGetter,
}

/// Options of service account tokens.
#[derive(Clone, Debug)]
pub struct KeyOptions {
    /// `--service-account-signing-key-file`.
    pub signing_key_file: Option<PathBuf>,
    /// `--service-account-key-file` (repeatable).
    pub key_files: Vec<PathBuf>,
    /// The data dir, where a key is generated when no signing key file is given.
    pub data_dir: PathBuf,
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The signing key and the verification keys.
pub fn load_keys(opts: &KeyOptions) -> Result<(SigningKey, Vec<PublicKey>), String> {
    let signing = match &opts.signing_key_file {
        Some(path) => SigningKey::from_pem(&read(path)?).map_err(|e| {
            format!(
                "failed to parse service-account-signing-key-file: {}: {e}",
                path.display()
            )
        })?,
        None => {
            let key_path = opts.data_dir.join(KEY_FILE);
            match std::fs::read_to_string(&key_path) {
                Ok(pem) => SigningKey::from_pem(&pem)
                    .map_err(|e| format!("{}: {e}", key_path.display()))?,
                Err(_) => {
                    let key = SigningKey::generate().map_err(|e| e.to_string())?;
                    write_private(&key_path, key.to_pem())?;
                    write_private(&opts.data_dir.join(PUB_FILE), &key.public_key().to_pem())?;
                    key
                }
            }
        }
    };
    let mut public = Vec::new();
    for path in &opts.key_files {
        public.extend(
            PublicKey::all_from_pem(&read(path)?)
                .map_err(|e| format!("{}: {e}", path.display()))?,
        );
    }
    if !public.iter().any(|k| k == signing.public_key()) {
        public.push(signing.public_key().clone());
    }
    Ok((signing, public))
}

fn write_private(path: &Path, contents: &str) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("{}: {e}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    Ok(())
}

impl ServiceAccountTokens {
    /// Tokens signed by `signing_key` for `issuers`, verified with `public_keys`
    /// against the objects of `getter`'s store; `lookup`: `--service-account-lookup`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        signing_key: SigningKey,
        public_keys: Vec<PublicKey>,
        issuers: Vec<String>,
        api_audiences: Vec<String>,
        max_expiration_seconds: i64,
        extend_expiration: bool,
        lookup: bool,
        getter: StoreGetter,
    ) -> ServiceAccountTokens {
        ServiceAccountTokens {
            legacy: TokenAuthenticator::legacy(public_keys.clone(), api_audiences.clone(), lookup),
            bound: TokenAuthenticator::bound(
                issuers.clone(),
                public_keys.clone(),
                api_audiences.clone(),
            ),
            signing_key,
            issuers,
            api_audiences,
            max_expiration_seconds,
            extend_expiration,
            public_keys,
            jwks_uri: None,
            getter,
        }
    }

    /// The issuer tokens are signed as.
    pub fn issuer(&self) -> &str {
        self.issuers.first().map(String::as_str).unwrap_or("")
    }

    /// The store the objects tokens name are read from.
    pub fn getter(&self) -> &StoreGetter {
        &self.getter
    }

    /// The identity `token` proves for `requested` audiences (`None`: the API
    /// server's): `Ok(None)` when it is no service account token of ours.
    pub fn authenticate(
        &self,
        token: &str,
        requested: Option<&[String]>,
    ) -> Result<Option<(UserInfo, Vec<String>)>, String> {
        let now = chrono::Utc::now().timestamp();
        for a in [&self.legacy, &self.bound] {
            match a.authenticate(token, requested, &self.getter, now) {
                Ok(Some(TokenIdentity { info, audiences })) => {
                    let user = UserInfo {
                        name: info.username(),
                        uid: info.uid.clone(),
                        groups: info.groups(),
                        extra: info.extra(),
                    };
                    return Ok(Some((user, audiences)));
                }
                Ok(None) => {}
                Err(e) => return Err(e.0),
            }
        }
        Ok(None)
    }
}
