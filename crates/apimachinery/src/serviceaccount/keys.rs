//! Service account signing and verification keys: ECDSA P-256/P-384 and RSA keys read
//! from PEM files (PKCS#8 `PRIVATE KEY`, SEC1 `EC PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY`,
//! PKIX `PUBLIC KEY`, PKCS#1 `RSA PUBLIC KEY`), generated P-256 keys, and upstream's key
//! ids: the unpadded base64url SHA-256 of the public key's PKIX DER encoding
//! (`keyIDFromPublicKey`).

use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};

use super::der::{self, pem_blocks, pem_encode, Reader};

/// `id-ecPublicKey` (1.2.840.10045.2.1).
const OID_ECDSA_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// `prime256v1` (1.2.840.10045.3.1.7).
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// `secp384r1` (1.3.132.0.34).
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
/// `rsaEncryption` (1.2.840.113549.1.1.1).
const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

/// A JWS signature algorithm this module signs and verifies with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RSA keys, as upstream signs with them).
    RS256,
    /// ECDSA P-256 with SHA-256.
    ES256,
    /// ECDSA P-384 with SHA-384.
    ES384,
}

impl Algorithm {
    /// The JWS `alg` name.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::RS256 => "RS256",
            Algorithm::ES256 => "ES256",
            Algorithm::ES384 => "ES384",
        }
    }
}

/// Why a key could not be read or used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

fn err(msg: impl Into<String>) -> KeyError {
    KeyError(msg.into())
}

/// A public key tokens are verified with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey {
    alg: Algorithm,
    /// EC: the uncompressed point; RSA: the PKCS#1 `RSAPublicKey` DER.
    key: Vec<u8>,
    kid: String,
}

impl PublicKey {
    fn new(alg: Algorithm, key: Vec<u8>) -> PublicKey {
        let mut k = PublicKey {
            alg,
            key,
            kid: String::new(),
        };
        let hash = ring::digest::digest(&ring::digest::SHA256, &k.pkix_der());
        k.kid = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hash.as_ref());
        k
    }

    /// The algorithm tokens signed by this key use.
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// Upstream's key id: base64url (unpadded) of the SHA-256 of [`Self::pkix_der`].
    pub fn key_id(&self) -> &str {
        &self.kid
    }

    /// The PKIX `SubjectPublicKeyInfo` DER encoding (Go's `x509.MarshalPKIXPublicKey`).
    pub fn pkix_der(&self) -> Vec<u8> {
        let alg_id = match self.alg {
            Algorithm::RS256 => [der::tlv(der::OID, OID_RSA), der::tlv(der::NULL, &[])].concat(),
            Algorithm::ES256 => [
                der::tlv(der::OID, OID_ECDSA_PUBLIC_KEY),
                der::tlv(der::OID, OID_P256),
            ]
            .concat(),
            Algorithm::ES384 => [
                der::tlv(der::OID, OID_ECDSA_PUBLIC_KEY),
                der::tlv(der::OID, OID_P384),
            ]
            .concat(),
        };
        let bits = [&[0u8][..], &self.key].concat();
        der::tlv(
            der::SEQUENCE,
            &[
                der::tlv(der::SEQUENCE, &alg_id),
                der::tlv(der::BIT_STRING, &bits),
            ]
            .concat(),
        )
    }

    /// The key as a `PUBLIC KEY` PEM block (what `sa.pub` holds).
    pub fn to_pem(&self) -> String {
        pem_encode("PUBLIC KEY", &self.pkix_der())
    }

    /// Whether `signature` is this key's signature of `message` with `alg`.
    pub fn verify(&self, alg: Algorithm, message: &[u8], signature: &[u8]) -> bool {
        if alg != self.alg {
            return false;
        }
        let params: &dyn signature::VerificationAlgorithm = match alg {
            Algorithm::RS256 => &signature::RSA_PKCS1_2048_8192_SHA256,
            Algorithm::ES256 => &signature::ECDSA_P256_SHA256_FIXED,
            Algorithm::ES384 => &signature::ECDSA_P384_SHA384_FIXED,
        };
        signature::UnparsedPublicKey::new(params, &self.key)
            .verify(message, signature)
            .is_ok()
    }

    /// The key as a JSON Web Key, as `/openid/v1/jwks` serves it (upstream
    /// `publicJWKSFromKeys`: `use`, `kty`, `kid`, `alg` and the key's parameters).
    pub fn jwk(&self) -> serde_json::Value {
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        match self.alg {
            Algorithm::ES256 | Algorithm::ES384 => {
                let coord = (self.key.len() - 1) / 2;
                let crv = if self.alg == Algorithm::ES256 {
                    "P-256"
                } else {
                    "P-384"
                };
                serde_json::json!({
                    "use": "sig",
                    "kty": "EC",
                    "kid": self.kid,
                    "crv": crv,
                    "alg": self.alg.name(),
                    "x": b64(&self.key[1..1 + coord]),
                    "y": b64(&self.key[1 + coord..]),
                })
            }
            Algorithm::RS256 => {
                let (n, e) = rsa_components(&self.key).unwrap_or_default();
                serde_json::json!({
                    "use": "sig",
                    "kty": "RSA",
                    "kid": self.kid,
                    "alg": "RS256",
                    "n": b64(n),
                    "e": b64(e),
                })
            }
        }
    }

    /// Every public key of a PEM file: `PUBLIC KEY` and `RSA PUBLIC KEY` blocks, and
    /// the public halves of private keys (upstream `keyutil.PublicKeysFromFile`: a
    /// `--service-account-key-file` may hold either). Unknown blocks are skipped; a
    /// file without keys is an error.
    pub fn all_from_pem(text: &str) -> Result<Vec<PublicKey>, KeyError> {
        let blocks = pem_blocks(text).map_err(err)?;
        let mut keys = Vec::new();
        for b in &blocks {
            match b.label.as_str() {
                "PUBLIC KEY" => keys.push(public_from_spki(&b.der)?),
                "RSA PUBLIC KEY" => {
                    rsa_components(&b.der).ok_or_else(|| err("malformed RSA public key"))?;
                    keys.push(PublicKey::new(Algorithm::RS256, b.der.clone()));
                }
                "PRIVATE KEY" | "EC PRIVATE KEY" | "RSA PRIVATE KEY" => keys.push(
                    SigningKey::from_block(&b.label, &b.der)?
                        .public_key()
                        .clone(),
                ),
                _ => {}
            }
        }
        if keys.is_empty() {
            return Err(err(
                "data does not contain any valid RSA or ECDSA public keys",
            ));
        }
        Ok(keys)
    }
}

fn strip_zeros(b: &[u8]) -> &[u8] {
    let i = b.iter().position(|&x| x != 0).unwrap_or(b.len());
    &b[i..]
}

/// The modulus and exponent of a PKCS#1 `RSAPublicKey`, without leading zero bytes.
fn rsa_components(der_bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut outer = Reader::new(der_bytes);
    let mut seq = Reader::new(outer.expect(der::SEQUENCE)?);
    let n = strip_zeros(seq.expect(der::INTEGER)?);
    let e = strip_zeros(seq.expect(der::INTEGER)?);
    (seq.is_empty() && outer.is_empty()).then_some((n, e))
}

fn public_from_spki(spki: &[u8]) -> Result<PublicKey, KeyError> {
    let malformed = || err("malformed PKIX public key");
    let mut outer = Reader::new(spki);
    let mut seq = Reader::new(outer.expect(der::SEQUENCE).ok_or_else(malformed)?);
    let mut alg_id = Reader::new(seq.expect(der::SEQUENCE).ok_or_else(malformed)?);
    let oid = alg_id.expect(der::OID).ok_or_else(malformed)?;
    let bits = seq.expect(der::BIT_STRING).ok_or_else(malformed)?;
    let (&unused, key) = bits.split_first().ok_or_else(malformed)?;
    if unused != 0 {
        return Err(malformed());
    }
    if oid == OID_RSA {
        rsa_components(key).ok_or_else(malformed)?;
        return Ok(PublicKey::new(Algorithm::RS256, key.to_vec()));
    }
    if oid == OID_ECDSA_PUBLIC_KEY {
        let curve = alg_id.expect(der::OID).ok_or_else(malformed)?;
        let (alg, len) = ec_curve(curve)?;
        if key.len() != len || key[0] != 4 {
            return Err(malformed());
        }
        return Ok(PublicKey::new(alg, key.to_vec()));
    }
    Err(err(
        "unsupported public key type (only RSA and ECDSA P-256/P-384 keys are)",
    ))
}

/// The algorithm and uncompressed point length of a named curve.
fn ec_curve(oid: &[u8]) -> Result<(Algorithm, usize), KeyError> {
    if oid == OID_P256 {
        Ok((Algorithm::ES256, 65))
    } else if oid == OID_P384 {
        Ok((Algorithm::ES384, 97))
    } else {
        Err(err("unsupported elliptic curve (only P-256 and P-384 are)"))
    }
}

enum Signer {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// A private key tokens are signed with, and its public key.
pub struct SigningKey {
    signer: Signer,
    public: PublicKey,
    pem: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.public.alg)
            .field("kid", &self.public.kid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new ECDSA P-256 key (what the API server generates into its data dir).
    pub fn generate() -> Result<SigningKey, KeyError> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| err("could not generate an ECDSA key"))?;
        SigningKey::from_block("PRIVATE KEY", doc.as_ref())
    }

    /// The first private key of a PEM file (`--service-account-signing-key-file`).
    pub fn from_pem(text: &str) -> Result<SigningKey, KeyError> {
        for b in pem_blocks(text).map_err(err)? {
            if matches!(
                b.label.as_str(),
                "PRIVATE KEY" | "EC PRIVATE KEY" | "RSA PRIVATE KEY"
            ) {
                return SigningKey::from_block(&b.label, &b.der);
            }
        }
        Err(err(
            "data does not contain a valid RSA or ECDSA private key",
        ))
    }

    fn from_block(label: &str, der_bytes: &[u8]) -> Result<SigningKey, KeyError> {
        let rng = SystemRandom::new();
        let (signer, public) = match label {
            "PRIVATE KEY" => {
                let (oid, curve) = pkcs8_algorithm(der_bytes)?;
                if oid == OID_RSA {
                    rsa_signer(RsaKeyPair::from_pkcs8(der_bytes))?
                } else {
                    let (alg, _) = ec_curve(&curve)?;
                    let pair = EcdsaKeyPair::from_pkcs8(ec_signing(alg), der_bytes, &rng)
                        .map_err(|e| err(format!("invalid ECDSA private key: {e}")))?;
                    let public = PublicKey::new(alg, pair.public_key().as_ref().to_vec());
                    (Signer::Ec(pair), public)
                }
            }
            "RSA PRIVATE KEY" => rsa_signer(RsaKeyPair::from_der(der_bytes))?,
            "EC PRIVATE KEY" => {
                let (alg, private, public) = sec1_parts(der_bytes)?;
                let pair = EcdsaKeyPair::from_private_key_and_public_key(
                    ec_signing(alg),
                    &private,
                    &public,
                    &rng,
                )
                .map_err(|e| err(format!("invalid ECDSA private key: {e}")))?;
                (Signer::Ec(pair), PublicKey::new(alg, public))
            }
            other => return Err(err(format!("unsupported PEM block {other:?}"))),
        };
        Ok(SigningKey {
            signer,
            public,
            pem: pem_encode(label, der_bytes),
        })
    }

    /// Its public key.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The private key as PEM (what `sa.key` holds).
    pub fn to_pem(&self) -> &str {
        &self.pem
    }

    /// The signature of `message` with the key's algorithm (JWS encoding: `r || s` for
    /// ECDSA).
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, KeyError> {
        let rng = SystemRandom::new();
        match &self.signer {
            Signer::Ec(pair) => pair
                .sign(&rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| err("signing failed")),
            Signer::Rsa(pair) => {
                let mut sig = vec![0u8; pair.public().modulus_len()];
                pair.sign(&signature::RSA_PKCS1_SHA256, &rng, message, &mut sig)
                    .map_err(|_| err("signing failed"))?;
                Ok(sig)
            }
        }
    }
}

fn ec_signing(alg: Algorithm) -> &'static signature::EcdsaSigningAlgorithm {
    if alg == Algorithm::ES384 {
        &signature::ECDSA_P384_SHA384_FIXED_SIGNING
    } else {
        &signature::ECDSA_P256_SHA256_FIXED_SIGNING
    }
}

fn rsa_signer(
    pair: Result<RsaKeyPair, ring::error::KeyRejected>,
) -> Result<(Signer, PublicKey), KeyError> {
    let pair = pair.map_err(|e| err(format!("invalid RSA private key: {e}")))?;
    let public = PublicKey::new(Algorithm::RS256, pair.public().as_ref().to_vec());
    Ok((Signer::Rsa(pair), public))
}

/// The algorithm OID of a PKCS#8 key and its parameter OID (the curve), if any.
fn pkcs8_algorithm(pkcs8: &[u8]) -> Result<(Vec<u8>, Vec<u8>), KeyError> {
    let malformed = || err("malformed PKCS#8 private key");
    let mut outer = Reader::new(pkcs8);
    let mut seq = Reader::new(outer.expect(der::SEQUENCE).ok_or_else(malformed)?);
    seq.expect(der::INTEGER).ok_or_else(malformed)?;
    let mut alg_id = Reader::new(seq.expect(der::SEQUENCE).ok_or_else(malformed)?);
    let oid = alg_id.expect(der::OID).ok_or_else(malformed)?.to_vec();
    let param = match alg_id.next() {
        Some(t) if t.tag == der::OID => t.value.to_vec(),
        _ => Vec::new(),
    };
    if oid != OID_RSA && oid != OID_ECDSA_PUBLIC_KEY {
        return Err(err(
            "unsupported private key type (only RSA and ECDSA keys are)",
        ));
    }
    Ok((oid, param))
}

/// The curve, private scalar and public point of a SEC1 `ECPrivateKey` (which must
/// name its curve and carry its public key, as OpenSSL and Go write them).
fn sec1_parts(sec1: &[u8]) -> Result<(Algorithm, Vec<u8>, Vec<u8>), KeyError> {
    let malformed = || err("malformed EC private key");
    let mut outer = Reader::new(sec1);
    let mut seq = Reader::new(outer.expect(der::SEQUENCE).ok_or_else(malformed)?);
    seq.expect(der::INTEGER).ok_or_else(malformed)?;
    let private = seq
        .expect(der::OCTET_STRING)
        .ok_or_else(malformed)?
        .to_vec();
    let mut curve = None;
    let mut public = None;
    while let Some(t) = seq.next() {
        match t.tag {
            0xa0 => curve = Reader::new(t.value).expect(der::OID).map(<[u8]>::to_vec),
            0xa1 => {
                let bits = Reader::new(t.value)
                    .expect(der::BIT_STRING)
                    .ok_or_else(malformed)?;
                public = bits.split_first().map(|(_, k)| k.to_vec());
            }
            _ => return Err(malformed()),
        }
    }
    let (alg, _) = ec_curve(&curve.ok_or_else(|| err("EC private key does not name its curve"))?)?;
    let public = public.ok_or_else(|| err("EC private key does not carry its public key"))?;
    Ok((alg, private, public))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::serviceaccount::testkeys::*;

    #[test]
    fn key_ids_are_upstreams() {
        // upstream TestKeyIDStability
        let rsa = PublicKey::all_from_pem(RSA_PUBLIC_KEY).unwrap();
        assert_eq!(
            rsa[0].key_id(),
            "JHJehTTTZlsspKHT-GaJxK7Kd1NQgZJu3fyK6K_QDYU"
        );
        let ec = PublicKey::all_from_pem(ECDSA_PUBLIC_KEY).unwrap();
        assert_eq!(
            ec[0].key_id(),
            "SoABiieYuNx4UdqYvZRVeuC6SihxgLrhLy9peHMHpTc"
        );
        // the same ids from the private keys
        assert_eq!(
            SigningKey::from_pem(RSA_PRIVATE_KEY).unwrap().public_key(),
            &rsa[0]
        );
        assert_eq!(
            SigningKey::from_pem(ECDSA_PRIVATE_KEY)
                .unwrap()
                .public_key(),
            &ec[0]
        );
    }

    #[test]
    fn pkix_encoding_round_trips() {
        for text in [RSA_PUBLIC_KEY, ECDSA_PUBLIC_KEY] {
            let k = &PublicKey::all_from_pem(text).unwrap()[0];
            assert_eq!(k.to_pem(), text);
        }
    }

    #[test]
    fn generated_keys_sign_and_verify_and_reload() {
        let key = SigningKey::generate().unwrap();
        assert_eq!(key.public_key().algorithm(), Algorithm::ES256);
        let sig = key.sign(b"hello").unwrap();
        assert!(key.public_key().verify(Algorithm::ES256, b"hello", &sig));
        assert!(!key.public_key().verify(Algorithm::ES256, b"hellO", &sig));
        assert!(!key.public_key().verify(Algorithm::RS256, b"hello", &sig));
        let again = SigningKey::from_pem(key.to_pem()).unwrap();
        assert_eq!(again.public_key(), key.public_key());
        let public = PublicKey::all_from_pem(&key.public_key().to_pem()).unwrap();
        assert_eq!(&public[0], key.public_key());
    }

    #[test]
    fn rsa_keys_sign_and_verify() {
        let key = SigningKey::from_pem(RSA_PRIVATE_KEY).unwrap();
        let sig = key.sign(b"m").unwrap();
        let public = &PublicKey::all_from_pem(RSA_PUBLIC_KEY).unwrap()[0];
        assert!(public.verify(Algorithm::RS256, b"m", &sig));
        assert!(!public.verify(Algorithm::RS256, b"n", &sig));
        let jwk = public.jwk();
        assert_eq!(jwk["kty"], "RSA");
        assert_eq!(jwk["e"], "AQAB");
    }

    /// upstream openidmetadata_test.go TestServeKeysetJSON's key set, byte for byte
    #[test]
    fn jwks_are_upstreams() {
        let rsa = &PublicKey::all_from_pem(RSA_PUBLIC_KEY).unwrap()[0];
        let ec = &PublicKey::all_from_pem(ECDSA_PUBLIC_KEY).unwrap()[0];
        let got =
            serde_json::to_string(&serde_json::json!({"keys": [rsa.jwk(), ec.jwk()]})).unwrap();
        assert_eq!(
            got,
            r#"{"keys":[{"use":"sig","kty":"RSA","kid":"JHJehTTTZlsspKHT-GaJxK7Kd1NQgZJu3fyK6K_QDYU","alg":"RS256","n":"249XwEo9k4tM8fMxV7zxOhcrP-WvXn917koM5Qr2ZXs4vo26e4ytdlrV0bQ9SlcLpQVSYjIxNfhTZdDt-ecIzshKuv1gKIxbbLQMOuK1eA_4HALyEkFgmS_tleLJrhc65tKPMGD-pKQ_xhmzRuCG51RoiMgbQxaCyYxGfNLpLAZK9L0Tctv9a0mJmGIYnIOQM4kC1A1I1n3EsXMWmeJUj7OTh_AjjCnMnkgvKT2tpKxYQ59PgDgU8Ssc7RDSmSkLxnrv-OrN80j6xrw0OjEiB4Ycr0PqfzZcvy8efTtFQ_Jnc4Bp1zUtFXt7-QeevePtQ2EcyELXE0i63T1CujRMWw","e":"AQAB"},{"use":"sig","kty":"EC","kid":"SoABiieYuNx4UdqYvZRVeuC6SihxgLrhLy9peHMHpTc","crv":"P-256","alg":"ES256","x":"H6cuzP8XuD5wal6wf9M6xDljTOPLX2i8uIp_C_ASqiI","y":"BlHnikLV9PyEd6gl8k4T_3Wwoh6xd79XLoQTh2PAi1Y"}]}"#
        );
    }

    #[test]
    fn jwk_of_an_ec_key() {
        let k = &PublicKey::all_from_pem(ECDSA_PUBLIC_KEY).unwrap()[0];
        let jwk = k.jwk();
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["crv"], "P-256");
        assert_eq!(jwk["alg"], "ES256");
        assert_eq!(jwk["use"], "sig");
        assert_eq!(jwk["kid"], k.key_id());
        assert_eq!(jwk["x"].as_str().unwrap().len(), 43);
    }

    /// upstream TestReadPrivateKey and TestReadPublicKeys
    #[test]
    fn reads_upstreams_key_files() {
        assert!(SigningKey::from_pem("").is_err());
        for pem in [
            RSA_PRIVATE_KEY,
            ECDSA_PRIVATE_KEY,
            ECDSA_PRIVATE_KEY_WITH_PARAMS,
        ] {
            SigningKey::from_pem(pem).unwrap();
        }
        assert_eq!(PublicKey::all_from_pem(RSA_PUBLIC_KEY).unwrap().len(), 1);
        assert_eq!(PublicKey::all_from_pem(ECDSA_PUBLIC_KEY).unwrap().len(), 1);
        let both = format!("{RSA_PUBLIC_KEY}\n{ECDSA_PUBLIC_KEY}");
        assert_eq!(PublicKey::all_from_pem(&both).unwrap().len(), 2);
        // a private key file serves as a public key file too
        assert_eq!(
            PublicKey::all_from_pem(RSA_PRIVATE_KEY).unwrap()[0].key_id(),
            PublicKey::all_from_pem(RSA_PUBLIC_KEY).unwrap()[0].key_id()
        );
    }

    #[test]
    fn files_without_keys_are_refused() {
        assert!(PublicKey::all_from_pem("").is_err());
        assert!(SigningKey::from_pem(RSA_PUBLIC_KEY).is_err());
        assert!(PublicKey::all_from_pem(
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"
        )
        .is_err());
    }
}
