//! Signed JWTs the client makes: client assertions (RFC 7523 `private_key_jwt`) and DPoP proofs
//! (RFC 9449), signed with `ring`.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _, RsaKeyPair};
use serde_json::{Value, json};

use crate::error::McpError;

/// A private key that signs JWTs: ES256 (P-256) or RS256.
#[derive(Clone)]
pub struct SigningKey {
    key: Arc<Key>,
}

enum Key {
    Es256(EcdsaKeyPair),
    Rs256(RsaKeyPair),
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey").field("alg", &self.alg()).finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A key from a PKCS#8 PEM document (`-----BEGIN PRIVATE KEY-----`): a P-256 key signs
    /// ES256, an RSA key RS256.
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, McpError> {
        let body: String = pem.lines().filter(|line| !line.starts_with("-----")).map(str::trim).collect();
        let der =
            STANDARD.decode(body).map_err(|e| McpError::Authorization(format!("the private key is not PEM: {e}")))?;
        Self::from_pkcs8_der(&der)
    }

    /// A key from PKCS#8 DER bytes.
    pub fn from_pkcs8_der(der: &[u8]) -> Result<Self, McpError> {
        let rng = SystemRandom::new();
        let key = match EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng) {
            Ok(pair) => Key::Es256(pair),
            Err(_) => match RsaKeyPair::from_pkcs8(der) {
                Ok(pair) => Key::Rs256(pair),
                Err(e) => {
                    return Err(McpError::Authorization(format!(
                        "the private key is neither a P-256 nor an RSA PKCS#8 key: {e}"
                    )));
                }
            },
        };
        Ok(SigningKey { key: Arc::new(key) })
    }

    /// A new P-256 key (a DPoP key lives as long as the client).
    pub(super) fn generate_es256() -> Result<Self, McpError> {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| McpError::Authorization("cannot make a DPoP key: the system has no randomness".into()))?;
        Self::from_pkcs8_der(der.as_ref())
    }

    /// The JWS algorithm.
    pub fn alg(&self) -> &'static str {
        match *self.key {
            Key::Es256(_) => "ES256",
            Key::Rs256(_) => "RS256",
        }
    }

    /// The public key as a JWK (RFC 7517).
    pub(super) fn public_jwk(&self) -> Value {
        match &*self.key {
            Key::Es256(pair) => {
                // An uncompressed point: 0x04, X, Y.
                let point = pair.public_key().as_ref();
                let (x, y) = point[1..].split_at(32);
                json!({"crv": "P-256", "kty": "EC", "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y)})
            }
            Key::Rs256(pair) => {
                let components = signature::RsaPublicKeyComponents::<Vec<u8>>::from(pair.public());
                json!({"e": URL_SAFE_NO_PAD.encode(&components.e), "kty": "RSA", "n": URL_SAFE_NO_PAD.encode(&components.n)})
            }
        }
    }

    /// `header.claims.signature`, compact serialization.
    pub(super) fn sign(&self, header: &Value, claims: &Value) -> Result<String, McpError> {
        let input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let rng = SystemRandom::new();
        let signature = match &*self.key {
            Key::Es256(pair) => pair.sign(&rng, input.as_bytes()).map(|s| s.as_ref().to_vec()),
            Key::Rs256(pair) => {
                let mut signature = vec![0; pair.public().modulus_len()];
                pair.sign(&signature::RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut signature).map(|()| signature)
            }
        }
        .map_err(|_| McpError::Authorization("signing a JWT failed".into()))?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

/// A client assertion (RFC 7523 §2.2): the client says who it is to `audience`, the
/// authorization server's issuer.
pub(super) fn client_assertion(
    key: &SigningKey,
    client_id: &str,
    audience: &str,
    now: u64,
) -> Result<String, McpError> {
    let header = json!({"alg": key.alg(), "typ": "JWT"});
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": super::random_token(16)?,
    });
    key.sign(&header, &claims)
}

/// A DPoP proof (RFC 9449 §4.2) for a request of `method` to `url` (its query and fragment
/// left out), bound to `access_token` when one is sent with it.
pub(super) fn dpop_proof(
    key: &SigningKey,
    method: &str,
    url: &str,
    nonce: Option<&str>,
    access_token: Option<&str>,
    now: u64,
) -> Result<String, McpError> {
    let htu = url.split(['?', '#']).next().unwrap_or(url);
    let header = json!({"typ": "dpop+jwt", "alg": key.alg(), "jwk": key.public_jwk()});
    let mut claims = json!({"jti": super::random_token(16)?, "htm": method, "htu": htu, "iat": now});
    if let Some(nonce) = nonce {
        claims["nonce"] = json!(nonce);
    }
    if let Some(token) = access_token {
        claims["ath"] = json!(URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, token.as_bytes())));
    }
    key.sign(&header, &claims)
}
