//! Signing the pushed policy the way `cosign sign --key` does, and verifying it the way
//! `kwctl verify -k` and policy-server do, all through the `sigstore` crate they use: a tag
//! `sha256-<hex>.sig` next to the artifact holding a simple-signing payload
//! (`application/vnd.dev.cosign.simplesigning.v1+json`) that names the artifact's digest, signed
//! in the layer's `dev.cosignproject.cosign/signature` annotation. Key-pair signatures need no
//! transparency log, so nothing here talks to Fulcio or Rekor.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sigstore::cosign::constraint::{Constraint, PrivateKeySigner};
use sigstore::cosign::verification_constraint::{PublicKeyVerifier, VerificationConstraintVec};
use sigstore::cosign::{verify_constraints, ClientBuilder, CosignCapabilities, SignatureLayer};
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::crypto::{SigStoreSigner, SigningScheme};
use sigstore::registry::{
    Auth, Certificate, CertificateEncoding, ClientConfig, ClientProtocol, OciReference,
};

use crate::oci::{self, Transport};

pub const PRIVATE_KEY: &str = "cosign.key";
pub const PUBLIC_KEY: &str = "cosign.pub";
/// Where cosign reads the private key's password from.
pub const PASSWORD_VAR: &str = "COSIGN_PASSWORD";
/// `cosign generate-key-pair` makes ECDSA P-256 keys; signing uses the matching scheme.
const SCHEME: SigningScheme = SigningScheme::ECDSA_P256_SHA256_ASN1;

/// The files `make keys` wrote.
#[derive(Debug)]
pub struct KeyPair {
    pub private: PathBuf,
    pub public: PathBuf,
}

/// What a signature check found.
#[derive(Debug)]
pub struct Verified {
    /// `registry/repository@sha256:…`: what was checked, whatever tag named it.
    pub artifact: String,
    /// `registry/repository:sha256-….sig`
    pub signature: String,
    /// Signatures found for the artifact's digest (the key's among them).
    pub signatures: usize,
}

/// What `sign` did.
#[derive(Debug)]
pub struct Signed {
    pub artifact: String,
    pub signature: String,
    /// The artifact already carried a signature by this key: nothing was pushed.
    pub already: bool,
}

/// The password cosign would use, from `COSIGN_PASSWORD` (set but empty is a valid, empty
/// password, as for cosign).
pub fn password_from_env() -> Result<String, String> {
    std::env::var(PASSWORD_VAR).map_err(|_| {
        format!("{PASSWORD_VAR} is not set: export the private key's password (cosign reads the same variable; `{PASSWORD_VAR}=` for an unencrypted key pair)")
    })
}

/// Writes a new key pair as `cosign generate-key-pair` does: `DIR/cosign.key` (ECDSA P-256,
/// encrypted with `password`, readable by its owner only) and `DIR/cosign.pub` (PEM).
pub fn generate_key_pair(dir: &Path, password: &[u8]) -> Result<KeyPair, String> {
    let pair = KeyPair {
        private: dir.join(PRIVATE_KEY),
        public: dir.join(PUBLIC_KEY),
    };
    for path in [&pair.private, &pair.public] {
        if path.exists() {
            return Err(format!(
                "{} exists and is not overwritten (signatures made with that key pair would no longer verify): remove it or choose another KEY_DIR",
                path.display()
            ));
        }
    }
    let keys = SCHEME
        .create_signer()
        .and_then(|signer| signer.to_sigstore_keypair())
        .map_err(|e| format!("cannot generate an ECDSA P-256 key pair: {e}"))?;
    let private = keys
        .private_key_to_encrypted_pem(password)
        .map_err(|e| format!("cannot encrypt the private key: {e}"))?;
    let public = keys
        .public_key_to_pem()
        .map_err(|e| format!("cannot encode the public key: {e}"))?;
    std::fs::create_dir_all(dir).map_err(|e| {
        format!(
            "{}: cannot create it ({e}): choose a KEY_DIR you can write to",
            dir.display()
        )
    })?;
    write_new(&pair.private, private.as_bytes(), 0o600)?;
    // Never half a pair: a private key without its public half cannot be checked against.
    write_new(&pair.public, public.as_bytes(), 0o644).inspect_err(|_| {
        let _ = std::fs::remove_file(&pair.private);
    })?;
    Ok(pair)
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|e| {
            format!(
                "{}: cannot write it ({e}): choose a KEY_DIR you can write to",
                path.display()
            )
        })
}

/// The signer in a cosign private key file (encrypted PEM, as cosign and `make keys` write it).
fn signer(key: &Path, password: &[u8]) -> Result<SigStoreSigner, String> {
    let pem = std::fs::read(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let keys = SigStoreKeyPair::from_encrypted_pem(&pem, password).map_err(|e| {
        format!(
            "{}: cannot decrypt it with {PASSWORD_VAR} ({e}): it must be a cosign private key (make keys, cosign generate-key-pair) and {PASSWORD_VAR} the password it was created with",
            key.display()
        )
    })?;
    keys.to_sigstore_signer(&SCHEME).map_err(|e| {
        format!(
            "{}: {e}: sign with an ECDSA P-256 key, as make keys and cosign generate-key-pair write them",
            key.display()
        )
    })
}

fn public_key(path: &Path) -> Result<PublicKeyVerifier, String> {
    let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    PublicKeyVerifier::try_from(&pem).map_err(|e| {
        format!(
            "{}: not a PEM public key ({e}): pass cosign.pub, the public half of the signing key pair",
            path.display()
        )
    })
}

/// The artifact a reference names, resolved to its digest, and where its signatures live.
struct Target {
    by_digest: OciReference,
    signatures: OciReference,
    auth: Auth,
    client: sigstore::cosign::Client,
}

impl Target {
    fn artifact(&self) -> String {
        self.by_digest.to_string()
    }

    async fn resolve(reference: &str, transport: &Transport) -> Result<Target, String> {
        let image = oci::parse(reference)?;
        let connection = oci::connection(&image, transport)?;
        let protocol = match connection.protocol {
            oci_client::client::ClientProtocol::Http => ClientProtocol::Http,
            oci_client::client::ClientProtocol::Https => ClientProtocol::Https,
            oci_client::client::ClientProtocol::HttpsExcept(r) => ClientProtocol::HttpsExcept(r),
        };
        let extra_root_certificates = connection
            .authorities
            .into_iter()
            .map(|data| Certificate {
                encoding: CertificateEncoding::Pem,
                data,
            })
            .collect();
        let mut client = ClientBuilder::default()
            .with_oci_client_config(ClientConfig {
                protocol,
                extra_root_certificates,
                ..Default::default()
            })
            .build()
            .map_err(|e| format!("cannot set up the registry client: {e}"))?;
        let auth = Auth::from(&oci::auth());
        let image: OciReference = image
            .whole()
            .parse()
            .map_err(|e| format!("{reference} is not an OCI reference: {e}"))?;
        // The `.sig` tag is derived from the digest the registry reports, as cosign does.
        let (signatures, digest) = client.triangulate(&image, &auth).await.map_err(|e| {
            format!(
                "cannot read {reference} from registry {} ({}): push it first (make push REGISTRY=…) and check the reference",
                image.registry(),
                oci::explain(image.registry(), &e)
            )
        })?;
        Ok(Target {
            by_digest: OciReference::with_digest(
                image.registry().to_string(),
                image.repository().to_string(),
                digest,
            ),
            signatures,
            auth,
            client,
        })
    }

    /// The signatures made for this digest (any key); layers for another digest are skipped.
    async fn signature_layers(&mut self) -> Result<Vec<SignatureLayer>, String> {
        let by_digest = self.by_digest.clone();
        self.client
            .trusted_signature_layers(&self.auth, &by_digest)
            .await
            .map_err(|e| format!("cannot read the signatures of {by_digest}: {e}"))
    }
}

/// Signs the artifact `reference` names, by digest, with the cosign private key `key`, and
/// pushes the signature next to it. Idempotent: an artifact this key already signed is left as
/// it is. Signatures by other keys are never replaced (cosign would append to them).
pub fn sign(
    reference: &str,
    key: &Path,
    password: &[u8],
    transport: &Transport,
) -> Result<Signed, String> {
    let signer = signer(key, password)?;
    let own: VerificationConstraintVec = vec![Box::new(
        signer
            .to_sigstore_keypair()
            .and_then(|pair| pair.public_key_to_pem())
            .and_then(|pem| PublicKeyVerifier::try_from(pem.as_bytes()))
            .map_err(|e| format!("{}: cannot derive its public key: {e}", key.display()))?,
    )];
    oci::runtime()?.block_on(async {
        let mut target = Target::resolve(reference, transport).await?;
        let mut signed = Signed {
            artifact: target.artifact(),
            signature: target.signatures.to_string(),
            already: false,
        };
        let existing = target.signature_layers().await?;
        if verify_constraints(&existing, own.iter()).is_ok() {
            signed.already = true;
            return Ok(signed);
        }
        if !existing.is_empty() {
            return Err(format!(
                "{} already holds {} signature(s) of {} by other keys, which signing here would replace: add this one with `cosign sign --key {} {}`, which appends",
                signed.signature,
                existing.len(),
                signed.artifact,
                key.display(),
                signed.artifact
            ));
        }
        let by_digest = target.by_digest.clone();
        let digest = by_digest.digest().unwrap_or_default().to_string();
        let mut layer = SignatureLayer::new_unsigned(&by_digest, &digest)
            .map_err(|e| format!("cannot build the signature payload: {e}"))?;
        // cosign's payload names the repository alone as the signed identity.
        layer.simple_signing.critical.identity.docker_reference =
            format!("{}/{}", by_digest.registry(), by_digest.repository());
        PrivateKeySigner::new_with_signer(signer)
            .add_constraint(&mut layer)
            .map_err(|e| format!("signing with {} failed: {e}", key.display()))?;
        let signatures = target.signatures.clone();
        target
            .client
            .push_signature(None, &target.auth, &signatures, vec![layer])
            .await
            .map_err(|e| {
                format!(
                    "pushing the signature {signatures} to registry {} failed: {e}",
                    signatures.registry()
                )
            })?;
        Ok(signed)
    })
}

/// Checks that the artifact `reference` names carries a signature by the public key in the
/// file `public_key_path`, for its current digest, the way `kwctl verify -k` does.
pub fn verify(
    reference: &str,
    public_key_path: &Path,
    transport: &Transport,
) -> Result<Verified, String> {
    let key: VerificationConstraintVec = vec![Box::new(public_key(public_key_path)?)];
    oci::runtime()?.block_on(async {
        let mut target = Target::resolve(reference, transport).await?;
        let artifact = target.artifact();
        let signature = target.signatures.to_string();
        let layers = target.signature_layers().await?;
        if layers.is_empty() {
            let tag = oci::parse(&signature)?;
            let tag_exists = oci::client(&tag, transport)?
                .fetch_manifest_digest(&tag, &oci::auth())
                .await
                .is_ok();
            return Err(if tag_exists {
                format!(
                    "{reference} ({artifact}) is not signed: {signature} holds no signature for this digest, so these bytes are not the ones that were signed; do not install it: push the release again and sign it (make push, make sign)"
                )
            } else {
                format!(
                    "{reference} ({artifact}) is not signed: there is no {signature}. Sign it (make sign REGISTRY=… COSIGN_KEY=cosign.key); if it was signed before, it has been pushed again since, with new bytes and so a new digest: sign that push"
                )
            });
        }
        verify_constraints(&layers, key.iter()).map_err(|_| {
            format!(
                "{reference} ({artifact}) is signed ({} signature(s) in {signature}), but not by the key in {}: verify with the public half of the key pair that signed it, or sign it with this key pair's cosign.key (make sign)",
                layers.len(),
                public_key_path.display()
            )
        })?;
        Ok(Verified {
            artifact,
            signature,
            signatures: layers.len(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "restage-gate-signing-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn make_keys_writes_an_encrypted_cosign_key_and_a_pem_public_key() {
        let dir = scratch("keys");
        let pair = generate_key_pair(&dir, b"s3cret").expect("key pair");
        let private = std::fs::read_to_string(&pair.private).expect("cosign.key");
        assert!(
            private.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----"),
            "{private}"
        );
        let public = std::fs::read_to_string(&pair.public).expect("cosign.pub");
        assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"), "{public}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&pair.private)
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "cosign.key is readable by its owner only");

        // The private key opens with its password only, and is the public key's other half.
        let signer = signer(&pair.private, b"s3cret").expect("decrypts");
        let err = super::signer(&pair.private, b"wrong").expect_err("wrong password");
        assert!(
            err.contains("cosign.key") && err.contains(PASSWORD_VAR),
            "{err}"
        );
        let derived = signer
            .to_sigstore_keypair()
            .and_then(|pair| pair.public_key_to_pem())
            .expect("public half");
        assert_eq!(derived, public);

        let err = generate_key_pair(&dir, b"other").expect_err("existing keys are kept");
        assert!(err.contains("cosign.key exists"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&pair.private).expect("cosign.key"),
            private
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_public_key_that_is_not_pem_is_named_in_the_error() {
        let dir = scratch("badpub");
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("cosign.pub");
        std::fs::write(&path, "not a key").expect("write");
        let err = public_key(&path).expect_err("not PEM");
        assert!(err.contains(&*path.to_string_lossy()), "{err}");
        assert!(err.contains("not a PEM public key"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
