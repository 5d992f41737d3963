use serde_json::json;

use super::*;

fn server(issuer: &str, iss_supported: Option<bool>) -> AuthorizationServerMetadata {
    serde_json::from_value(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": iss_supported,
        "scopes_supported": ["mcp", "offline_access"],
    }))
    .unwrap()
}

#[test]
fn bearer_challenges_are_read_among_other_schemes() {
    let check = |headers: &[&str], metadata: Option<&str>, scope: Option<&str>, error: Option<&str>| {
        let headers: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
        let challenge = Challenge::parse(&headers);
        assert_eq!(challenge.resource_metadata.as_deref(), metadata, "{headers:?}");
        assert_eq!(challenge.scope.as_deref(), scope, "{headers:?}");
        assert_eq!(challenge.error.as_deref(), error, "{headers:?}");
    };
    check(
        &[r#"Bearer resource_metadata="http://x/.well-known/oauth-protected-resource/mcp", scope="a b""#],
        Some("http://x/.well-known/oauth-protected-resource/mcp"),
        Some("a b"),
        None,
    );
    check(
        &[r#"Basic realm="r", Bearer error="insufficient_scope", scope="files:write""#],
        None,
        Some("files:write"),
        Some("insufficient_scope"),
    );
    check(&[r#"bearer error=invalid_token,scope=x"#], None, Some("x"), Some("invalid_token"));
    check(&[r#"Bearer scope="a \"quoted\" b""#], None, Some(r#"a "quoted" b"#), None);
    check(&[r#"Basic realm="bearer""#, "Bearer"], None, None, None);
    check(&[r#"NotBearer scope="x""#], None, None, None);
    check(&[r#"Bearer scope="unterminated"#], None, Some("unterminated"), None);
    check(&[], None, None, None);
}

#[test]
fn issuer_metadata_urls_follow_the_specified_order() {
    assert_eq!(
        discovery::metadata_urls("https://as.example/tenant1/"),
        [
            "https://as.example/.well-known/oauth-authorization-server/tenant1",
            "https://as.example/.well-known/openid-configuration/tenant1",
            "https://as.example/tenant1/.well-known/openid-configuration",
        ]
    );
    assert_eq!(
        discovery::metadata_urls("http://localhost:3000"),
        [
            "http://localhost:3000/.well-known/oauth-authorization-server",
            "http://localhost:3000/.well-known/openid-configuration"
        ]
    );
}

#[test]
fn a_resource_names_the_server_or_a_parent_of_it() {
    let check = |resource: &str, server: &str, same: bool| {
        assert_eq!(discovery::is_same_resource(resource, server), same, "{resource} for {server}");
    };
    check("http://localhost:1/mcp", "http://localhost:1/mcp", true);
    check("http://localhost:1", "http://localhost:1/mcp", true);
    check("http://localhost:1/", "http://localhost:1/mcp", true);
    check("HTTP://LOCALHOST:1/mcp", "http://localhost:1/mcp/", true);
    check("http://localhost:1/mc", "http://localhost:1/mcp", false);
    check("http://localhost:1/other", "http://localhost:1/mcp", false);
    check("http://localhost:2/mcp", "http://localhost:1/mcp", false);
    check("https://evil.example/mcp", "http://localhost:1/mcp", false);
    check("not a url", "http://localhost:1/mcp", false);
}

#[test]
fn the_callback_is_checked_for_state_and_issuer() {
    let check = |callback: &str, iss_supported: Option<bool>, expected: Result<&str, &str>| {
        let result = read_callback(callback, "s1", &server("http://as", iss_supported));
        match (result, expected) {
            (Ok(code), Ok(want)) => assert_eq!(code, want),
            (Err(McpError::Authorization(message)), Err(want)) => assert!(message.contains(want), "{message}"),
            (other, want) => panic!("{callback}: {other:?}, wanted {want:?}"),
        }
    };
    check("http://127.0.0.1/cb?code=c%2B1&state=s1&iss=http%3A%2F%2Fas", Some(true), Ok("c+1"));
    check("http://127.0.0.1/cb?code=c&state=s1", None, Ok("c"));
    check("http://127.0.0.1/cb?code=c&state=s1&iss=http%3A%2F%2Fas", None, Ok("c"));
    check("http://127.0.0.1/cb?code=c&state=s1", Some(true), Err("promised an `iss`"));
    check("http://127.0.0.1/cb?code=c&state=s1&iss=https%3A%2F%2Fevil", Some(true), Err("mix-up"));
    check("http://127.0.0.1/cb?code=c&state=s1&iss=https%3A%2F%2Fevil", None, Err("mix-up"));
    check("http://127.0.0.1/cb?code=c&state=s1&iss=http%3A%2F%2Fas%2F", Some(true), Err("mix-up"));
    check("http://127.0.0.1/cb?code=c&state=other&iss=http%3A%2F%2Fas", Some(true), Err("state"));
    check("http://127.0.0.1/cb?state=s1&iss=http%3A%2F%2Fas", Some(true), Err("no code"));
    check(
        "http://127.0.0.1/cb?error=access_denied&error_description=no&state=s1&iss=http%3A%2F%2Fas",
        Some(true),
        Err("access_denied no"),
    );
    check("http://127.0.0.1/cb?error=access_denied&state=forged", Some(true), Err("state"));
}

#[test]
fn pkce_challenges_are_the_s256_of_their_verifiers() {
    let pkce = Pkce::new().unwrap();
    assert!(pkce.verifier.len() >= 43, "RFC 7636 wants 43 to 128 characters");
    let digest = ring::digest::digest(&ring::digest::SHA256, pkce.verifier.as_bytes());
    assert_eq!(pkce.challenge, URL_SAFE_NO_PAD.encode(digest.as_ref()));
    assert_ne!(Pkce::new().unwrap().verifier, pkce.verifier);
}

#[test]
fn scopes_add_offline_access_where_offered_and_unite_on_step_up() {
    assert_eq!(with_offline_access("mcp", &server("http://as", None)), "mcp offline_access");
    assert_eq!(with_offline_access("mcp offline_access", &server("http://as", None)), "mcp offline_access");
    let mut plain = server("http://as", None);
    plain.scopes_supported = None;
    assert_eq!(with_offline_access("mcp", &plain), "mcp");
    assert_eq!(union_scopes(Some("a b"), Some("b c")).as_deref(), Some("a b c"));
    assert_eq!(union_scopes(None, None), None);
}

#[test]
fn the_token_endpoint_auth_method_follows_the_registration_then_the_server() {
    let client = |secret: Option<&str>, method: Option<&str>| ClientCredentials {
        client_id: "id".into(),
        client_secret: secret.map(str::to_owned),
        token_endpoint_auth_method: method.map(str::to_owned),
    };
    let mut metadata = server("http://as", None);
    assert_eq!(auth_method(&client(None, None), &metadata), AuthMethod::None);
    assert_eq!(auth_method(&client(Some("s"), None), &metadata), AuthMethod::Basic);
    assert_eq!(auth_method(&client(Some("s"), Some("client_secret_post")), &metadata), AuthMethod::Post);
    metadata.token_endpoint_auth_methods_supported = Some(vec!["client_secret_post".into()]);
    assert_eq!(auth_method(&client(Some("s"), None), &metadata), AuthMethod::Post);
    assert_eq!(auth_method(&client(Some("s"), Some("none")), &metadata), AuthMethod::None);
}

#[test]
fn token_answers_are_read_and_secrets_stay_out_of_debug() {
    let tokens = Tokens::from_response(
        &json!({"access_token": "secret-a", "token_type": "bearer", "expires_in": 100, "refresh_token": "secret-r", "scope": "mcp"}),
        1000,
        false,
    )
    .unwrap();
    assert_eq!(tokens.expires_at, Some(1100));
    assert!(tokens.expires_within(Duration::from_secs(60), 1050));
    assert!(!tokens.expires_within(Duration::from_secs(60), 1000));
    let shown = format!("{tokens:?}");
    assert!(!shown.contains("secret"), "{shown}");
    let huge =
        Tokens::from_response(&json!({"access_token": "a", "expires_in": u64::MAX}), u64::MAX - 1, false).unwrap();
    assert_eq!(huge.expires_at, Some(u64::MAX));
    let refused = |answer: Value| match Tokens::from_response(&answer, 0, false) {
        Err(McpError::Authorization(message)) => message,
        other => panic!("{answer}: {other:?}"),
    };
    assert!(refused(json!({"token_type": "Bearer"})).contains("without an access_token"));
    assert!(refused(json!({"access_token": "a", "token_type": "DPoP"})).contains("only Bearer"));
    let client = ClientCredentials {
        client_id: "id".into(),
        client_secret: Some("secret-c".into()),
        token_endpoint_auth_method: None,
    };
    assert!(!format!("{client:?}").contains("secret-c"));
}

#[test]
fn forms_encode_and_decode_both_ways() {
    let encoded = form_encode(&[("a b", "x&y=z/é".to_owned()), ("c", String::new())]);
    assert_eq!(encoded, "a%20b=x%26y%3Dz%2F%C3%A9&c=");
    assert_eq!(form_decode(&encoded), [("a b".to_owned(), "x&y=z/é".to_owned()), ("c".to_owned(), String::new())]);
    assert_eq!(form_decode("a=1+2&&b"), [("a".to_owned(), "1 2".to_owned()), ("b".to_owned(), String::new())]);
}

#[tokio::test]
async fn the_file_store_keeps_authorizations_private_and_survives_a_broken_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/tokens.json");
    let store = FileTokenStore::new(&path);
    assert_eq!(store.load("http://a/mcp").await, None);
    let saved = StoredAuthorization {
        client: Some(ClientCredentials {
            client_id: "id".into(),
            client_secret: None,
            token_endpoint_auth_method: None,
        }),
        issuer: "http://as".into(),
        token_endpoint: "http://as/token".into(),
        resource: "http://a/mcp".into(),
        tokens: Tokens {
            access_token: "t".into(),
            refresh_token: Some("r".into()),
            expires_at: Some(5),
            scope: None,
            token_type: None,
        },
    };
    store.save("http://a/mcp", &saved).await.unwrap();
    store.save("http://b/mcp", &saved).await.unwrap();
    assert_eq!(FileTokenStore::new(&path).load("http://a/mcp").await, Some(saved.clone()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    std::fs::write(&path, b"{ not json").unwrap();
    assert_eq!(store.load("http://a/mcp").await, None);
    store.save("http://a/mcp", &saved).await.unwrap();
    assert_eq!(store.load("http://a/mcp").await, Some(saved));
    assert_eq!(
        std::fs::read(path.with_extension("unreadable")).unwrap(),
        b"{ not json",
        "the broken file is kept aside"
    );
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn jwt_parts(token: &str) -> (Value, Value, Vec<u8>, String) {
    let mut parts = token.split('.');
    let mut next = || URL_SAFE_NO_PAD.decode(parts.next().unwrap()).unwrap();
    let header: Value = serde_json::from_slice(&next()).unwrap();
    let claims: Value = serde_json::from_slice(&next()).unwrap();
    let signature = next();
    let signed = token.rsplit_once('.').unwrap().0.to_owned();
    (header, claims, signature, signed)
}

#[test]
fn dpop_proofs_carry_the_key_method_url_nonce_and_token_hash_and_verify() {
    let key = SigningKey::generate_es256().unwrap();
    let proof = jwt::dpop_proof(&key, "POST", "https://rs.example/mcp?x=1#f", Some("n-1"), Some("tok"), 1000).unwrap();
    let (header, claims, signature, signed) = jwt_parts(&proof);
    assert_eq!((header["typ"].as_str(), header["alg"].as_str()), (Some("dpop+jwt"), Some("ES256")));
    assert!(header["jwk"].get("d").is_none(), "no private part: {header}");
    assert_eq!(claims["htu"], "https://rs.example/mcp");
    assert_eq!(
        (claims["htm"].as_str(), claims["nonce"].as_str(), claims["iat"].as_u64()),
        (Some("POST"), Some("n-1"), Some(1000))
    );
    let ath = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, b"tok"));
    assert_eq!(claims["ath"], ath);
    let coordinate = |name: &str| URL_SAFE_NO_PAD.decode(header["jwk"][name].as_str().unwrap()).unwrap();
    let point = [vec![4], coordinate("x"), coordinate("y")].concat();
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point)
        .verify(signed.as_bytes(), &signature)
        .expect("the proof verifies with the key it names");
    let again = jwt::dpop_proof(&key, "POST", "https://rs.example/mcp", None, None, 1000).unwrap();
    let (_, claims_again, _, _) = jwt_parts(&again);
    assert_ne!(claims_again["jti"], claims["jti"], "every proof is fresh");
    assert!(claims_again.get("nonce").is_none() && claims_again.get("ath").is_none());
}

#[test]
fn client_assertions_name_the_client_and_the_issuer_and_keys_come_from_pem() {
    let rng = ring::rand::SystemRandom::new();
    let der =
        ring::signature::EcdsaKeyPair::generate_pkcs8(&ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let body = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
    let pem = format!("-----BEGIN PRIVATE KEY-----\n{}\n{}\n-----END PRIVATE KEY-----\n", &body[..64], &body[64..]);
    let key = SigningKey::from_pkcs8_pem(&pem).unwrap();
    assert_eq!(key.alg(), "ES256");
    let assertion = jwt::client_assertion(&key, "client-1", "https://as.example", 1000).unwrap();
    let (header, claims, _, _) = jwt_parts(&assertion);
    assert_eq!(header["alg"], "ES256");
    assert_eq!((claims["iss"].as_str(), claims["sub"].as_str()), (Some("client-1"), Some("client-1")));
    assert_eq!((claims["aud"].as_str(), claims["exp"].as_u64()), (Some("https://as.example"), Some(1300)));
    let refused = |pem: &str| match SigningKey::from_pkcs8_pem(pem) {
        Err(McpError::Authorization(message)) => message,
        other => panic!("{other:?}"),
    };
    assert!(refused("-----BEGIN PRIVATE KEY-----\n!!!\n").contains("not PEM"));
    assert!(refused("-----BEGIN PRIVATE KEY-----\nAAAA\n").contains("neither a P-256 nor an RSA"));
    assert!(!format!("{key:?}").contains(&body[..16]));
}

#[tokio::test]
async fn assertions_are_read_from_files_at_each_use_within_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "jwt-1\n").unwrap();
    let assertion = Assertion::File(path.clone());
    assert_eq!(assertion.read().await.unwrap(), "jwt-1");
    std::fs::write(&path, "jwt-2").unwrap();
    assert_eq!(assertion.read().await.unwrap(), "jwt-2", "a rotated token is read again");
    std::fs::write(&path, vec![b'a'; 70 * 1024]).unwrap();
    assert!(matches!(assertion.read().await, Err(McpError::Authorization(m)) if m.contains("over 64 KiB")));
    assert!(matches!(Assertion::File(dir.path().join("missing")).read().await, Err(McpError::Authorization(_))));
    assert_eq!(format!("{:?}", Assertion::Value("secret".into())), "Assertion::Value(****)");
}

#[test]
fn dpop_challenges_are_read_like_bearer_ones() {
    let challenge = Challenge::parse(&[r#"DPoP error="use_dpop_nonce", resource_metadata="http://x/prm""#.to_owned()]);
    assert!(challenge.dpop);
    assert_eq!(challenge.error.as_deref(), Some("use_dpop_nonce"));
    assert_eq!(challenge.resource_metadata.as_deref(), Some("http://x/prm"));
    assert!(!Challenge::parse(&[r#"Bearer scope="a""#.to_owned()]).dpop);
    let tokens = Tokens::from_response(&json!({"access_token": "a", "token_type": "DPoP"}), 0, true).unwrap();
    assert!(tokens.is_dpop());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_of_one_file_saving_at_once_lose_no_server() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.json");
    let saved = |n: usize| StoredAuthorization {
        client: None,
        issuer: "http://as".into(),
        token_endpoint: "http://as/token".into(),
        resource: format!("http://s{n}/mcp"),
        tokens: Tokens {
            access_token: format!("t{n}"),
            refresh_token: None,
            expires_at: None,
            scope: None,
            token_type: None,
        },
    };
    let saves = (0..16).map(|n| {
        let store = FileTokenStore::new(&path);
        let authorization = saved(n);
        tokio::spawn(async move { store.save(&format!("http://s{n}/mcp"), &authorization).await })
    });
    for save in futures_join(saves).await {
        save.unwrap().unwrap();
    }
    let store = FileTokenStore::new(&path);
    for n in 0..16 {
        assert_eq!(store.load(&format!("http://s{n}/mcp")).await, Some(saved(n)), "server {n} kept");
    }
}

async fn futures_join<T>(
    handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
) -> Vec<Result<T, tokio::task::JoinError>> {
    let mut results = Vec::new();
    for handle in handles.collect::<Vec<_>>() {
        results.push(handle.await);
    }
    results
}

#[test]
fn oauth_traffic_goes_to_https_or_this_machine_only() {
    for (url, safe) in [
        ("https://as.example/token", true),
        ("http://localhost:3000/token", true),
        ("http://127.0.0.1/authorize", true),
        ("http://[::1]:8080/x", true),
        ("http://user@localhost:1/x", true),
        ("http://169.254.169.254/latest", false),
        ("http://as.example/token", false),
        ("http://localhost.evil.example/x", false),
        ("file:///etc/passwd", false),
        ("-a Calculator", false),
    ] {
        assert_eq!(discovery::is_safe_endpoint(url), safe, "{url}");
    }
}

#[test]
fn a_refusal_hides_the_credential_it_carried() {
    let refusal = Refusal {
        status: 401,
        www_authenticate: vec!["Bearer".into()],
        authorization: Some("Bearer secret-token".into()),
        dpop_nonce: None,
    };
    assert!(!format!("{refusal:?}").contains("secret-token"));
}
