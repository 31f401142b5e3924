//! What Kubernetes checks of PKCS#10 certificate requests and X.509 certificates
//! (upstream `pkg/apis/certificates` `ParseCSR`, the CSR validation's
//! `validateCertificate`, and the signer's reading of a request): the request's PEM
//! block and signature, its subject and alternative names; certificates' PEM blocks
//! and validity.

use std::net::IpAddr;

use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;

use crate::pem;

/// The PEM type of a certificate request.
pub const CERTIFICATE_REQUEST_BLOCK: &str = "CERTIFICATE REQUEST";
/// The PEM type of a certificate.
pub const CERTIFICATE_BLOCK: &str = "CERTIFICATE";

/// What a signer reads of a certificate request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertificateRequest {
    /// The request's DER bytes.
    pub der: Vec<u8>,
    /// The subject's common name (the first, as Go's `pkix.Name.CommonName`).
    pub common_name: String,
    /// The subject's organizations.
    pub organizations: Vec<String>,
    /// Requested DNS names.
    pub dns_names: Vec<String>,
    /// Requested IP addresses.
    pub ip_addresses: Vec<IpAddr>,
    /// Requested email addresses.
    pub email_addresses: Vec<String>,
    /// Requested URIs.
    pub uris: Vec<String>,
}

/// A request from the PEM text of a CSR's `spec.request` (upstream `ParseCSR`): the
/// first PEM block must be a `CERTIFICATE REQUEST` that parses.
pub fn parse_csr(pem_text: &[u8]) -> Result<CertificateRequest, String> {
    let block = match pem::decode(pem_text) {
        Some((b, _)) if b.kind == CERTIFICATE_REQUEST_BLOCK => b,
        _ => return Err("PEM block type must be CERTIFICATE REQUEST".into()),
    };
    let (_, csr) = X509CertificationRequest::from_der(&block.bytes)
        .map_err(|e| format!("x509: malformed certificate request: {e}"))?;
    let info = &csr.certification_request_info;
    let text = |a: &x509_parser::x509::AttributeTypeAndValue<'_>| {
        a.as_str()
            .map(str::to_string)
            .unwrap_or_else(|_| String::from_utf8_lossy(a.as_slice()).into_owned())
    };
    let mut out = CertificateRequest {
        der: block.bytes.clone(),
        common_name: info
            .subject
            .iter_common_name()
            .next()
            .map(text)
            .unwrap_or_default(),
        organizations: info.subject.iter_organization().map(text).collect(),
        ..CertificateRequest::default()
    };
    if let Some(exts) = csr.requested_extensions() {
        for ext in exts {
            if let ParsedExtension::SubjectAlternativeName(san) = ext {
                for name in &san.general_names {
                    match name {
                        GeneralName::DNSName(d) => out.dns_names.push(d.to_string()),
                        GeneralName::RFC822Name(m) => out.email_addresses.push(m.to_string()),
                        GeneralName::URI(u) => out.uris.push(u.to_string()),
                        GeneralName::IPAddress(ip) => {
                            if let Ok(v4) = <[u8; 4]>::try_from(*ip) {
                                out.ip_addresses.push(IpAddr::from(v4));
                            } else if let Ok(v6) = <[u8; 16]>::try_from(*ip) {
                                out.ip_addresses.push(IpAddr::from(v6));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Whether the request's self-signature verifies (Go's `CheckSignature`).
pub fn check_signature(req: &CertificateRequest) -> Result<(), String> {
    let (_, csr) = X509CertificationRequest::from_der(&req.der)
        .map_err(|e| format!("x509: malformed certificate request: {e}"))?;
    csr.verify_signature()
        .map_err(|_| "x509: signature verification failure".to_string())
}

/// Upstream's check of a CSR's `status.certificate`: only `CERTIFICATE` blocks without
/// headers, each a certificate, at least one; empty data is fine.
pub fn validate_certificate_pem(data: &[u8]) -> Result<(), String> {
    if data.is_empty() {
        return Ok(());
    }
    let mut rest = data;
    let mut blocks = 0;
    while let Some((b, next)) = pem::decode(rest) {
        if b.kind != CERTIFICATE_BLOCK {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {}",
                crate::gofmt::quote(&b.kind)
            ));
        }
        if b.has_headers {
            return Err("no PEM block headers are permitted".into());
        }
        blocks += 1;
        if x509_parser::parse_x509_certificate(&b.bytes).is_err() {
            return Err("x509: malformed certificate".into());
        }
        rest = next;
    }
    if blocks == 0 {
        return Err("must contain at least one CERTIFICATE PEM block".into());
    }
    Ok(())
}

/// The validity (`notBefore`, `notAfter`, Unix seconds) of the first certificate of
/// PEM text; `None` when there is none that parses.
pub fn first_certificate_validity(data: &[u8]) -> Option<(i64, i64)> {
    let (b, _) = pem::decode(data)?;
    if b.kind != CERTIFICATE_BLOCK {
        return None;
    }
    let (_, cert) = x509_parser::parse_x509_certificate(&b.bytes).ok()?;
    let v = cert.validity();
    Some((v.not_before.timestamp(), v.not_after.timestamp()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_need_a_certificate_request_block() {
        assert_eq!(
            parse_csr(b"garbage").unwrap_err(),
            "PEM block type must be CERTIFICATE REQUEST"
        );
        let cert = pem::encode("CERTIFICATE", b"x");
        assert_eq!(
            parse_csr(cert.as_bytes()).unwrap_err(),
            "PEM block type must be CERTIFICATE REQUEST"
        );
        let bad = pem::encode("CERTIFICATE REQUEST", b"not der");
        assert!(parse_csr(bad.as_bytes())
            .unwrap_err()
            .starts_with("x509: malformed certificate request"));
    }

    #[test]
    fn certificate_content_rules() {
        assert!(validate_certificate_pem(b"").is_ok());
        assert_eq!(
            validate_certificate_pem(b"junk").unwrap_err(),
            "must contain at least one CERTIFICATE PEM block"
        );
        assert_eq!(
            validate_certificate_pem(pem::encode("RSA PRIVATE KEY", b"k").as_bytes()).unwrap_err(),
            "only CERTIFICATE PEM blocks are allowed, found \"RSA PRIVATE KEY\""
        );
        assert_eq!(
            validate_certificate_pem(pem::encode("CERTIFICATE", b"k").as_bytes()).unwrap_err(),
            "x509: malformed certificate"
        );
    }
}
