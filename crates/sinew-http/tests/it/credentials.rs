//! Credentials fetched when a request is sent: an [`Auth::Token`]'s source is asked before each
//! attempt, its errors fail the call (or are retried when they may pass), and what it fetched
//! never shows.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use sinew_core::{
    CancellationToken, Failure, Message, ProviderError, RetryConfig, StreamEvent, StreamProvider, StreamRequest,
};
use sinew_http::{AccessToken, Auth, CredentialCache, Expiring, HttpProvider, TokenSource};
use sinew_testing::{MockServer, ServedResponse};

use crate::limits::{Lines, LinesConfig, failure};

/// Hands out what it was given, in order, counting the calls.
#[derive(Debug, Default)]
struct Script(Mutex<VecDeque<Result<AccessToken, ProviderError>>>);

#[async_trait]
impl TokenSource for Script {
    async fn token(&self) -> Result<AccessToken, ProviderError> {
        self.0.lock().unwrap().pop_front().expect("the source was asked once too often")
    }
}

fn script(tokens: impl IntoIterator<Item = Result<&'static str, ProviderError>>) -> Arc<Script> {
    let tokens = tokens.into_iter().map(|t| t.map(|t| AccessToken::new(t, None))).collect();
    Arc::new(Script(Mutex::new(tokens)))
}

fn provider(server: &MockServer, source: Arc<Script>) -> HttpProvider<Lines> {
    let config = LinesConfig { url: server.url(), auth: Auth::Token(source) };
    HttpProvider::<Lines>::new(config).with_retry(RetryConfig::new(2, 1, 1.0, 1))
}

async fn text(provider: &HttpProvider<Lines>) -> String {
    let prompt = Message::user("hi");
    let messages = [&prompt];
    let request = StreamRequest::new("m", "", &messages);
    let events: Vec<StreamEvent> = provider.stream(&request, CancellationToken::new()).collect().await;
    match events.into_iter().last() {
        Some(StreamEvent::Done(message)) => message.text(),
        other => panic!("expected the call to succeed, it ended with {other:?}"),
    }
}

fn answer() -> ServedResponse {
    ServedResponse::sse("data: ok\n\ndata: [DONE]\n\n")
}

#[tokio::test]
async fn each_attempt_asks_the_source_and_sends_its_token() {
    let server = MockServer::scripted([ServedResponse::new(503), answer()]).await;
    let source = script([Ok("TOKEN-ONE"), Ok("TOKEN-TWO")]);
    assert_eq!(text(&provider(&server, Arc::clone(&source))).await, "ok");
    let sent: Vec<_> = server.requests().iter().map(|r| r.header("authorization").unwrap().to_owned()).collect();
    assert_eq!(sent, ["Bearer TOKEN-ONE", "Bearer TOKEN-TWO"], "the retry got a token of its own");
    assert!(source.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_source_that_fails_for_good_fails_the_call_before_the_server_is_called() {
    let server = MockServer::scripted([answer()]).await;
    let refused = ProviderError::Auth("the refresh token was revoked".into());
    let (error, _) = failure(&provider(&server, script([Err(refused.clone())]))).await;
    assert_eq!(error, refused);
    assert!(server.requests().is_empty(), "no credentials, no call");
}

#[tokio::test]
async fn a_source_that_may_pass_on_a_second_try_is_retried() {
    let server = MockServer::scripted([answer()]).await;
    let down = ProviderError::Network(Failure::from("the metadata server did not answer".to_owned()));
    let source = script([Err(down), Ok("TOKEN")]);
    assert_eq!(text(&provider(&server, source)).await, "ok");
    assert_eq!(server.requests()[0].header("authorization"), Some("Bearer TOKEN"));
}

/// A source that keeps its token until told the service refused it: `TOKEN-1`, `TOKEN-2`...
#[derive(Debug)]
struct Kept(CredentialCache<String>);

#[async_trait]
impl TokenSource for Kept {
    async fn token(&self) -> Result<AccessToken, ProviderError> {
        self.0.get().await.map(|token| AccessToken::new(token, None))
    }

    fn invalidate(&self) -> bool {
        self.0.invalidate()
    }
}

fn kept() -> Arc<Kept> {
    let fetches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    Arc::new(Kept(CredentialCache::new(move || {
        let n = fetches.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        async move { Ok(Expiring { value: format!("TOKEN-{n}"), expires_at: None }) }
    })))
}

/// Credentials the service refuses before they expire (revoked, rotated) are forgotten and
/// fetched again for one more attempt; refused again, the call fails with the service's answer.
#[tokio::test]
async fn refused_credentials_are_fetched_again_once() {
    let server = MockServer::scripted([ServedResponse::new(401), answer(), answer()]).await;
    let config = LinesConfig { url: server.url(), auth: Auth::Token(kept()) };
    let renewing = HttpProvider::<Lines>::new(config).with_retry(RetryConfig::new(2, 1, 1.0, 1));
    assert_eq!(text(&renewing).await, "ok");
    // The token that passed is kept for the next call.
    assert_eq!(text(&renewing).await, "ok");
    let sent: Vec<_> = server.requests().iter().map(|r| r.header("authorization").unwrap().to_owned()).collect();
    assert_eq!(sent, ["Bearer TOKEN-1", "Bearer TOKEN-2", "Bearer TOKEN-2"]);

    let server = MockServer::scripted([ServedResponse::new(401), ServedResponse::new(403), answer()]).await;
    let config = LinesConfig { url: server.url(), auth: Auth::Token(kept()) };
    let refused = HttpProvider::<Lines>::new(config).with_retry(RetryConfig::new(2, 1, 1.0, 1));
    let (error, _) = failure(&refused).await;
    assert!(matches!(error, ProviderError::Auth(_)), "{error:?}");
    assert_eq!(server.requests().len(), 2, "one renewal, no more");

    // A source that keeps nothing would give the same token: no second attempt.
    let server = MockServer::scripted([ServedResponse::new(401), answer()]).await;
    let (error, _) = failure(&provider(&server, script([Ok("TOKEN")]))).await;
    assert!(matches!(error, ProviderError::Auth(_)), "{error:?}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_token_never_shows() {
    let token = AccessToken::new("SECRET-TOKEN", None);
    let auth = Auth::Token(Arc::new(Script(Mutex::new(VecDeque::from([Ok(token.clone())])))));
    let shown = format!("{token:?} {auth:?}");
    assert!(!shown.contains("SECRET"), "{shown}");
    assert_eq!(auth.clone(), auth, "a token source equals itself");
    assert_ne!(auth, Auth::Token(script([])));
}
