//! Credentials fetched when a request is sent: tokens and keys that expire, from cloud
//! credential chains (AWS, Google, Entra ID) or anything else asynchronous.
//!
//! The request builders stay pure: a provider whose credentials are fetched adds them with an
//! [`Authorizer`] just before each attempt is sent ([`crate::Protocol::authorizer`]). A
//! [`CredentialCache`] keeps what a source fetched until shortly before it expires, refreshes it
//! in the background while it is still good, and makes concurrent callers share one fetch.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use sinew_core::{Failure, ProviderError};

use crate::request::HttpRequest;

/// A bearer token and when it expires. `Debug` never shows the token.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    /// The token, sent as `Authorization: Bearer <token>`.
    pub token: String,
    /// When the token stops being accepted; `None` when it does not say.
    pub expires_at: Option<SystemTime>,
}

impl AccessToken {
    /// A token that expires at `expires_at`.
    pub fn new(token: impl Into<String>, expires_at: Option<SystemTime>) -> Self {
        AccessToken { token: token.into(), expires_at }
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessToken").field("token", &"****").field("expires_at", &self.expires_at).finish()
    }
}

/// Where bearer tokens come from (Google's Application Default Credentials, Entra ID...), asked
/// before every attempt: an implementation caches (see [`CredentialCache`]).
#[async_trait]
pub trait TokenSource: Send + Sync + fmt::Debug {
    /// A token good for the next request; an error fails that attempt (and is retried when it
    /// is [retryable](ProviderError::is_retryable)).
    async fn token(&self) -> Result<AccessToken, ProviderError>;

    /// The service refused the last token handed out (401 or 403) before it expired: revoked or
    /// rotated. A source that keeps tokens forgets it, so the next call fetches a new one, and
    /// says whether it did; the default keeps nothing to forget.
    fn invalidate(&self) -> bool {
        false
    }
}

/// Adds credentials to a request just before an attempt is sent: a bearer token from a
/// [`TokenSource`], a SigV4 signature made with fetched keys.
#[async_trait]
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// Adds the credentials to `request`; an error fails the attempt (and is retried when it is
    /// [retryable](ProviderError::is_retryable)).
    async fn authorize(&self, request: &mut HttpRequest) -> Result<(), ProviderError>;

    /// The service refused the credentials just added (401 or 403): forget any kept, so the
    /// next attempt gets fresh ones. `true` when something was forgotten: the transport then
    /// sends the request once more (fetching the same credentials again would not help).
    fn rejected(&self) -> bool {
        false
    }
}

/// `Authorization: Bearer <token>` with a token from the source.
#[derive(Debug)]
pub struct BearerAuthorizer(pub Arc<dyn TokenSource>);

#[async_trait]
impl Authorizer for BearerAuthorizer {
    async fn authorize(&self, request: &mut HttpRequest) -> Result<(), ProviderError> {
        let token = self.0.token().await?;
        request.headers.push(("authorization".into(), format!("Bearer {}", token.token)));
        Ok(())
    }

    fn rejected(&self) -> bool {
        self.0.invalidate()
    }
}

/// A credential and when it expires, as a source fetched it.
#[derive(Clone)]
pub struct Expiring<T> {
    /// The credential.
    pub value: T,
    /// When it stops being accepted; `None` when it does not expire (it is kept for good).
    pub expires_at: Option<SystemTime>,
}

impl<T> fmt::Debug for Expiring<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expiring").field("value", &"****").field("expires_at", &self.expires_at).finish()
    }
}

type Fetch<T> = BoxFuture<'static, Result<Expiring<T>, ProviderError>>;
type Fetcher<T> = Box<dyn Fn() -> Fetch<T> + Send + Sync>;
/// The fetch under way, awaited by whoever needs its result.
type Fetching<T> = Shared<Fetch<T>>;

/// When a [`CredentialCache`] refreshes and how long a fetch may take. Start from
/// [`CachePolicy::default`] and set the fields you change (more may come).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CachePolicy {
    /// A credential this close to its expiry is refreshed in the background while it is still
    /// handed out (5 minutes, as the AWS and Azure SDKs do).
    pub refresh_ahead: Duration,
    /// A credential this close to its expiry is not handed out: callers wait for a new one
    /// (30 seconds: the time a request may take to reach the service).
    pub expiry_margin: Duration,
    /// A fetch taking longer fails with [`ProviderError::Network`] (30 seconds; retryable).
    pub fetch_timeout: Duration,
    /// After a failed background refresh, the wait before the next one (10 seconds); callers
    /// go on with the credential they have.
    pub retry_after_failure: Duration,
}

impl Default for CachePolicy {
    fn default() -> Self {
        CachePolicy {
            refresh_ahead: Duration::from_secs(300),
            expiry_margin: Duration::from_secs(30),
            fetch_timeout: Duration::from_secs(30),
            retry_after_failure: Duration::from_secs(10),
        }
    }
}

/// Keeps a fetched credential until shortly before it expires.
///
/// - A fresh credential is handed out at once.
/// - Within [`CachePolicy::refresh_ahead`] of its expiry, it is still handed out while one
///   background task fetches the next (so no request waits for a refresh).
/// - Missing or within [`CachePolicy::expiry_margin`] of its expiry, callers wait for a fetch,
///   one for all of them; its error reaches each of them and the next call tries again.
///
/// Fetches run on the Tokio runtime (each in a task of its own, whoever waits), each bounded by
/// [`CachePolicy::fetch_timeout`]. Clones share the cache.
pub struct CredentialCache<T> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    fetch: Fetcher<T>,
    policy: CachePolicy,
    slot: Mutex<Slot<T>>,
}

struct Slot<T> {
    current: Option<Expiring<T>>,
    fetching: Option<Fetching<T>>,
    failed_at: Option<Instant>,
}

impl<T: Clone + Send + Sync + 'static> CredentialCache<T> {
    /// A cache whose credentials come from `fetch`, with the default [`CachePolicy`].
    pub fn new<F, Fut>(fetch: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Expiring<T>, ProviderError>> + Send + 'static,
    {
        CredentialCache::with_policy(CachePolicy::default(), fetch)
    }

    /// A cache whose credentials come from `fetch`, refreshed as `policy` says.
    pub fn with_policy<F, Fut>(policy: CachePolicy, fetch: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Expiring<T>, ProviderError>> + Send + 'static,
    {
        let fetch: Fetcher<T> = Box::new(move || fetch().boxed());
        let slot = Mutex::new(Slot { current: None, fetching: None, failed_at: None });
        CredentialCache { inner: Arc::new(Inner { fetch, policy, slot }) }
    }

    /// A credential good for the next request (see the type's documentation).
    pub async fn get(&self) -> Result<T, ProviderError> {
        let pending = {
            let mut slot = lock(&self.inner.slot);
            let now = SystemTime::now();
            let policy = &self.inner.policy;
            match &slot.current {
                Some(current) if !expires_within(current, now, policy.refresh_ahead) => {
                    return Ok(current.value.clone());
                }
                Some(current) if !expires_within(current, now, policy.expiry_margin) => {
                    let value = current.value.clone();
                    let failed_lately = slot.failed_at.is_some_and(|at| at.elapsed() < policy.retry_after_failure);
                    if slot.fetching.is_none() && !failed_lately {
                        // Driven by its own task; this caller does not wait for it.
                        drop(start_fetch(&self.inner, &mut slot));
                    }
                    return Ok(value);
                }
                _ => match &slot.fetching {
                    Some(fetching) => fetching.clone(),
                    None => start_fetch(&self.inner, &mut slot),
                },
            }
        };
        pending.await.map(|fetched| fetched.value)
    }

    /// Forgets the credential held, so the next call fetches a new one (after the service
    /// refused it, say); `true` when one was held.
    pub fn invalidate(&self) -> bool {
        lock(&self.inner.slot).current.take().is_some()
    }
}

/// Starts the one fetch of `inner` (the caller holds its slot's lock) and returns it; when it
/// ends, its result is kept (a success) or noted (a failure), whoever awaits it.
fn start_fetch<T: Clone + Send + Sync + 'static>(inner: &Arc<Inner<T>>, slot: &mut Slot<T>) -> Fetching<T> {
    let fetch = (inner.fetch)();
    let timeout = inner.policy.fetch_timeout;
    let weak: Weak<Inner<T>> = Arc::downgrade(inner);
    let fetching = async move {
        let result = match tokio::time::timeout(timeout, fetch).await {
            Ok(result) => result,
            // A source that did not answer in time may answer next time.
            Err(_) => Err(ProviderError::Network(Failure::from(format!(
                "fetching credentials took longer than {timeout:?}"
            )))),
        };
        if let Some(inner) = weak.upgrade() {
            let mut slot = lock(&inner.slot);
            slot.fetching = None;
            match &result {
                Ok(fetched) => {
                    slot.current = Some(fetched.clone());
                    slot.failed_at = None;
                }
                Err(error) => {
                    slot.failed_at = Some(Instant::now());
                    if slot.current.is_some() {
                        tracing::warn!(%error, "refreshing credentials failed; the current ones are used until they expire");
                    }
                }
            }
        }
        result
    }
    .boxed()
    .shared();
    slot.fetching = Some(fetching.clone());
    // Its own task drives it to the end: a caller that stops waiting (cancelled, out of time)
    // leaves no half-done fetch for the next one.
    tokio::spawn(fetching.clone());
    fetching
}

fn expires_within<T>(credential: &Expiring<T>, now: SystemTime, window: Duration) -> bool {
    credential.expires_at.is_some_and(|at| at.duration_since(now).map_or(true, |left| left <= window))
}

fn lock<T>(slot: &Mutex<Slot<T>>) -> MutexGuard<'_, Slot<T>> {
    // The lock is never held across an await or a call that can panic.
    slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<T> Clone for CredentialCache<T> {
    fn clone(&self) -> Self {
        CredentialCache { inner: Arc::clone(&self.inner) }
    }
}

impl<T> fmt::Debug for CredentialCache<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slot = lock(&self.inner.slot);
        f.debug_struct("CredentialCache")
            .field("expires_at", &slot.current.as_ref().map(|c| c.expires_at))
            .field("fetching", &slot.fetching.is_some())
            .field("policy", &self.inner.policy)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::sync::Semaphore;

    use super::*;

    /// A source answering from a script, each fetch waiting for a permit of `gate` first.
    struct Source {
        answers: Mutex<VecDeque<Result<Expiring<String>, ProviderError>>>,
        fetches: AtomicUsize,
        gate: Semaphore,
    }

    /// A cache over a scripted source whose fetches are let through `open` at a time.
    fn cache(
        answers: impl IntoIterator<Item = Result<(&'static str, Option<u64>), ProviderError>>,
        open: usize,
    ) -> (CredentialCache<String>, Arc<Source>) {
        let now = SystemTime::now();
        let answers = answers
            .into_iter()
            .map(|a| {
                a.map(|(value, secs)| Expiring {
                    value: value.to_owned(),
                    expires_at: secs.map(|s| now + Duration::from_secs(s)),
                })
            })
            .collect();
        let source =
            Arc::new(Source { answers: Mutex::new(answers), fetches: AtomicUsize::new(0), gate: Semaphore::new(open) });
        let fetching = Arc::clone(&source);
        let cache = CredentialCache::new(move || {
            let source = Arc::clone(&fetching);
            async move {
                source.fetches.fetch_add(1, Ordering::SeqCst);
                source.gate.acquire().await.expect("the gate stays open").forget();
                source.answers.lock().unwrap().pop_front().expect("fetched once too often")
            }
        });
        (cache, source)
    }

    fn fetches(source: &Source) -> usize {
        source.fetches.load(Ordering::SeqCst)
    }

    /// Lets the spawned refresh run to where it waits (or ends).
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_fresh_credential_is_fetched_once_and_kept() {
        let (cache, source) = cache([Ok(("A", Some(3600)))], 1);
        for _ in 0..3 {
            assert_eq!(cache.get().await.unwrap(), "A");
        }
        assert_eq!(fetches(&source), 1);
        let forever = self::cache([Ok(("K", None))], 1).0;
        assert_eq!((forever.get().await.unwrap(), forever.get().await.unwrap()), ("K".into(), "K".into()));
    }

    #[tokio::test]
    async fn concurrent_callers_share_one_fetch() {
        let (cache, source) = cache([Ok(("A", Some(3600)))], 0);
        let callers: Vec<_> = (0..5)
            .map(|_| {
                tokio::spawn({
                    let cache = cache.clone();
                    async move { cache.get().await }
                })
            })
            .collect();
        settle().await;
        source.gate.add_permits(1);
        for caller in callers {
            assert_eq!(caller.await.unwrap().unwrap(), "A");
        }
        assert_eq!(fetches(&source), 1);
    }

    #[tokio::test]
    async fn a_credential_near_its_expiry_is_used_while_the_next_is_fetched() {
        // 200 s left: within the 5 minutes of refresh, outside the 30 s margin.
        let (cache, source) = cache([Ok(("OLD", Some(200))), Ok(("NEW", Some(3600)))], 1);
        assert_eq!(cache.get().await.unwrap(), "OLD");
        // The refresh waits at the gate: callers are not kept waiting for it.
        assert_eq!(cache.get().await.unwrap(), "OLD");
        assert_eq!(cache.get().await.unwrap(), "OLD");
        settle().await;
        assert_eq!(fetches(&source), 2, "one refresh for all");
        source.gate.add_permits(1);
        settle().await;
        assert_eq!(cache.get().await.unwrap(), "NEW");
        assert_eq!(fetches(&source), 2);
    }

    #[tokio::test]
    async fn a_credential_about_to_expire_is_not_handed_out() {
        let (cache, source) = cache([Ok(("OLD", Some(10))), Ok(("NEW", Some(3600)))], 2);
        assert_eq!(cache.get().await.unwrap(), "OLD", "what a fetch returns is used once");
        assert_eq!(cache.get().await.unwrap(), "NEW");
        assert_eq!(fetches(&source), 2);
    }

    #[tokio::test]
    async fn a_failed_fetch_reaches_the_caller_and_the_next_call_tries_again() {
        let refused = ProviderError::Auth("refused".into());
        let (cache, source) = cache([Err(refused.clone()), Ok(("A", Some(3600)))], 2);
        assert_eq!(cache.get().await.unwrap_err(), refused);
        assert_eq!(cache.get().await.unwrap(), "A");
        assert_eq!(fetches(&source), 2);
    }

    #[tokio::test]
    async fn a_failed_refresh_keeps_the_credential_and_waits_before_trying_again() {
        let down = ProviderError::Timeout("down".into());
        let (cache, source) = cache([Ok(("OLD", Some(200))), Err(down), Ok(("NEW", Some(3600)))], 2);
        assert_eq!(cache.get().await.unwrap(), "OLD");
        assert_eq!(cache.get().await.unwrap(), "OLD", "starts the refresh");
        settle().await;
        assert_eq!(cache.get().await.unwrap(), "OLD", "the refresh failed: the credential is still good");
        settle().await;
        assert_eq!(fetches(&source), 2, "no new refresh right after a failure");
        cache.invalidate();
        source.gate.add_permits(1);
        assert_eq!(cache.get().await.unwrap(), "NEW", "a forgotten credential is fetched again");
    }

    #[tokio::test]
    async fn a_caller_that_stops_waiting_leaves_the_fetch_running_for_the_next() {
        let (cache, source) = cache([Ok(("A", Some(3600)))], 0);
        let first = tokio::spawn({
            let cache = cache.clone();
            async move { cache.get().await }
        });
        settle().await;
        first.abort();
        assert!(first.await.unwrap_err().is_cancelled());
        source.gate.add_permits(1);
        settle().await;
        let shown = format!("{cache:?}");
        assert!(shown.contains("fetching: false") && shown.contains("expires_at: Some(Some("), "{shown}");
        assert_eq!(cache.get().await.unwrap(), "A", "fetched by its own task, kept");
        assert_eq!(fetches(&source), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_fetch_that_never_ends_times_out() {
        let (cache, _source) = cache([], 0);
        let error = cache.get().await.unwrap_err();
        assert_eq!(error.to_string(), "network error: fetching credentials took longer than 30s");
        assert!(error.is_retryable());
    }

    #[tokio::test]
    async fn debug_shows_no_credential() {
        let expiring = Expiring { value: "SECRET", expires_at: None };
        let (cache, _) = cache([Ok(("SECRET-VALUE", Some(3600)))], 1);
        assert_eq!(cache.get().await.unwrap(), "SECRET-VALUE");
        let shown = format!("{expiring:?} {cache:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
    }
}
