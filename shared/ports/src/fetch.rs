//! The SSRF guard: which URLs and which resolved addresses `http_fetch` may reach. Pure: the
//! resolver and the HTTP client call into it, so every connection — first hop and every
//! redirect — passes the same checks.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use async_trait::async_trait;
use url::{Host, Url};

/// Where host names are looked up. Production uses the system resolver; tests (and
/// deployments with fixed hosts) a static table. The guard runs on whatever it returns.
#[async_trait]
pub trait HostLookup: Send + Sync {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>>;
}

/// Why a URL or an address is refused; the message is what the planner sees.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("scheme `{0}` is not allowed (http and https only)")]
    Scheme(String),
    #[error("URLs with credentials (user@host) are not allowed")]
    Credentials,
    #[error("the URL has no host")]
    NoHost,
    #[error("host `{0}` is a local name")]
    LocalName(String),
    #[error("host `{0}` is denied by this deployment")]
    Denied(String),
    #[error("host `{0}` is not on this deployment's allow list")]
    NotAllowed(String),
    #[error("{0} is a {1} address")]
    Address(IpAddr, &'static str),
    #[error("host `{0}` did not resolve")]
    Unresolved(String),
    #[error("more than {0} redirects")]
    TooManyRedirects(usize),
}

/// Per-deployment rules on top of the fixed address checks.
#[derive(Clone, Debug, Default)]
pub struct FetchPolicy {
    /// When not empty, only these hosts (and their subdomains) may be fetched.
    pub allow: Vec<String>,
    /// These hosts (and their subdomains) are never fetched.
    pub deny: Vec<String>,
    /// Host names that may resolve to private addresses (an intranet wiki, a test server), or
    /// IP addresses that may be reached by their literal (`127.0.0.1`, `::1`: exactly that
    /// address). A name never extends to other names resolving to the same address.
    pub trusted_private: Vec<String>,
}

fn matches(host: &str, pattern: &str) -> bool {
    let pattern = pattern.trim().trim_end_matches('.').to_ascii_lowercase();
    !pattern.is_empty() && (host == pattern || host.ends_with(&format!(".{pattern}")))
}

/// One DNS label, as the `url` crate accepts it.
const LABEL: &str = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const PORT: &str =
    "(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?";

impl FetchPolicy {
    /// The URLs a user may register for the platform to call (tools, webhooks, MCP servers),
    /// as the pattern the API document states: https to a DNS name with an alphabetic top
    /// level (never an IP literal), or http too for a host the deployment trusts as private;
    /// an optional port and path; no credentials.
    pub fn registrable_url_pattern(&self) -> String {
        let public = format!("({LABEL}\\.)+[A-Za-z]{{2,63}}");
        let trusted: Vec<String> = self
            .trusted_private
            .iter()
            .map(|t| t.trim().trim_end_matches('.'))
            .filter(|t| !t.is_empty())
            .map(|t| format!("({LABEL}\\.)*{}", regex::escape(t)))
            .collect();
        let hosts = match trusted.is_empty() {
            true => format!("https://{public}"),
            false => {
                let t = trusted.join("|");
                format!("(https://({public}|{t})|http://({t}))")
            }
        };
        format!("^{hosts}{PORT}(/[!-~]*)?$")
    }

    /// A URL a user registers: it must match [`Self::registrable_url_pattern`] as sent, and
    /// pass [`Self::check_url`] (DNS is checked again at every call).
    pub fn check_registrable(&self, raw: &str) -> Result<Url, String> {
        // A pattern's `$` also matches before one final newline in most regex dialects.
        let raw = raw.strip_suffix('\n').unwrap_or(raw);
        let pattern = regex::Regex::new(&self.registrable_url_pattern())
            .map_err(|e| format!("the deployment's trusted hosts make no pattern: {e}"))?;
        if !pattern.is_match(raw) {
            let http = match self.trusted_private.is_empty() {
                true => "",
                false => " (http for a host this deployment trusts)",
            };
            return Err(format!(
                "`{raw}` must be an https URL{http} of a host name, not an IP address, \
                 with no credentials or spaces"
            ));
        }
        let url = Url::parse(raw).map_err(|e| format!("`{raw}` is not valid: {e}"))?;
        self.check_url(&url)
            .map_err(|r| format!("`{raw}` is refused: {r}"))?;
        Ok(url)
    }

    /// Checks everything that can be known before DNS: scheme, credentials, host name rules
    /// and IP literals (which the `url` crate has already normalised from decimal, octal, hex
    /// and shortened spellings).
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::Scheme(url.scheme().to_string()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refusal::Credentials);
        }
        match url.host() {
            None => Err(Refusal::NoHost),
            Some(Host::Ipv4(ip)) => self
                .check_name(&ip.to_string())
                .and(self.check_literal(IpAddr::V4(ip))),
            Some(Host::Ipv6(ip)) => self
                .check_name(&ip.to_string())
                .and(self.check_literal(IpAddr::V6(ip))),
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                let local = name == "localhost" || name.ends_with(".localhost");
                // Only a deployment that names it in `trusted_private` reaches its own machine.
                if name.is_empty() || (local && !self.is_trusted_private(&name)) {
                    return Err(Refusal::LocalName(name));
                }
                self.check_name(&name)
            }
        }
    }

    /// An IP literal in a URL: public, or an address the deployment trusts by that literal.
    fn check_literal(&self, ip: IpAddr) -> Result<(), Refusal> {
        let trusted = self.trusted_private.iter().any(|t| {
            let t = t.trim().trim_start_matches('[').trim_end_matches(']');
            t.parse::<IpAddr>().is_ok_and(|t| t == ip)
        });
        if trusted { Ok(()) } else { check_ip(ip) }
    }

    fn check_name(&self, host: &str) -> Result<(), Refusal> {
        if self.deny.iter().any(|p| matches(host, p)) {
            return Err(Refusal::Denied(host.to_string()));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|p| matches(host, p)) {
            return Err(Refusal::NotAllowed(host.to_string()));
        }
        Ok(())
    }

    /// Whether `host` (a name, never an IP literal's check) may resolve to private addresses.
    pub fn is_trusted_private(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.trusted_private.iter().any(|p| matches(&host, p))
    }

    /// Checks every address a name resolved to; one bad address refuses the name, so a
    /// resolver that mixes public and private answers cannot steer the connection.
    pub fn check_resolved(&self, host: &str, addrs: &[IpAddr]) -> Result<(), Refusal> {
        if addrs.is_empty() {
            return Err(Refusal::Unresolved(host.to_string()));
        }
        if self.is_trusted_private(host) {
            return Ok(());
        }
        addrs.iter().try_for_each(|ip| check_ip(*ip))
    }
}

/// Refuses every address that is not plain public unicast.
pub fn check_ip(ip: IpAddr) -> Result<(), Refusal> {
    match classify(ip) {
        None => Ok(()),
        Some(kind) => Err(Refusal::Address(ip, kind)),
    }
}

/// The kind of non-public address `ip` is, or `None` for public unicast.
pub fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], bits: u32) -> bool {
    let mask = if bits == 0 {
        0
    } else {
        u32::MAX << (32 - bits)
    };
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    const RANGES: [([u8; 4], u32, &str); 16] = [
        ([0, 0, 0, 0], 8, "unspecified (this-network)"),
        ([10, 0, 0, 0], 8, "private"),
        ([100, 64, 0, 0], 10, "carrier-grade NAT (shared)"),
        ([127, 0, 0, 0], 8, "loopback"),
        ([169, 254, 0, 0], 16, "link-local (cloud metadata)"),
        ([172, 16, 0, 0], 12, "private"),
        ([192, 0, 0, 0], 24, "IETF protocol assignment"),
        ([192, 0, 2, 0], 24, "documentation"),
        ([192, 88, 99, 0], 24, "6to4 relay anycast"),
        ([192, 168, 0, 0], 16, "private"),
        ([198, 18, 0, 0], 15, "benchmarking"),
        ([198, 51, 100, 0], 24, "documentation"),
        ([203, 0, 113, 0], 24, "documentation"),
        ([224, 0, 0, 0], 4, "multicast"),
        ([240, 0, 0, 0], 4, "reserved"),
        ([255, 255, 255, 255], 32, "broadcast"),
    ];
    RANGES
        .iter()
        .find(|(net, bits, _)| in_v4(ip, *net, *bits))
        .map(|(_, _, kind)| *kind)
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, bits: u32) -> bool {
    let mask = if bits == 0 {
        0
    } else {
        u128::MAX << (128 - bits)
    };
    u128::from(ip) & mask == u128::from(net) & mask
}

fn v6(segments: [u16; 8]) -> Ipv6Addr {
    Ipv6Addr::from(segments)
}

fn classify_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    // Forms that carry an IPv4 address are judged by that address.
    let embedded = |shift: u32| Ipv4Addr::from(((bits >> shift) & 0xffff_ffff) as u32);
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(classify_v4(v4).unwrap_or("IPv4-mapped"));
    }
    if in_v6(ip, v6([0, 0, 0, 0, 0, 0, 0, 0]), 96) {
        // Deprecated IPv4-compatible form (::a.b.c.d): never legitimate on the wire.
        return Some(classify_v4(embedded(0)).unwrap_or("IPv4-compatible"));
    }
    if in_v6(ip, v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0]), 96) {
        // NAT64 reaches the embedded IPv4 address.
        return classify_v4(embedded(0)).map(|_| "NAT64 of a non-public IPv4");
    }
    if in_v6(ip, v6([0x2002, 0, 0, 0, 0, 0, 0, 0]), 16) {
        return classify_v4(embedded(80)).map(|_| "6to4 of a non-public IPv4");
    }
    const RANGES: [([u16; 8], u32, &str); 9] = [
        ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "local-use NAT64"),
        ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only"),
        ([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, "Teredo"),
        ([0x2001, 0x2, 0, 0, 0, 0, 0, 0], 48, "benchmarking"),
        ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "documentation"),
        ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "unique-local (private)"),
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local"),
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "site-local"),
        ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast"),
    ];
    if let Some((_, _, kind)) = RANGES.iter().find(|(net, b, _)| in_v6(ip, v6(*net), *b)) {
        return Some(kind);
    }
    // Everything outside global unicast (2000::/3) is reserved.
    (!in_v6(ip, v6([0x2000, 0, 0, 0, 0, 0, 0, 0]), 3)).then_some("reserved")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_url_is_an_https_host_name_or_a_trusted_host() {
        let policy = FetchPolicy {
            trusted_private: vec!["hooks.test".into()],
            ..FetchPolicy::default()
        };
        for good in [
            "https://example.com/hook",
            "https://api.example.co.uk:8443/v1?x=1",
            "http://hooks.test:9000/in",
            "https://a.hooks.test",
        ] {
            assert!(policy.check_registrable(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "https://10.0.0.1/",
            "https://169.254.169.254/latest",
            "https://[::ffff:169.254.169.254]/",
            "https://0x7f.1/",
            "https://user:pw@example.com/",
            "http://example.com/",
            "https://example.com:99999/",
            " https://example.com/",
            "https://localhost/",
        ] {
            assert!(policy.check_registrable(bad).is_err(), "{bad:?}");
        }
        let strict = FetchPolicy::default();
        assert!(strict.check_registrable("http://hooks.test/").is_err());
    }

    fn refused(url: &str) -> Refusal {
        let url = Url::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        FetchPolicy::default().check_url(&url).expect_err("refused")
    }

    fn classified(addr: &str) -> Option<&'static str> {
        classify(addr.parse().unwrap_or_else(|e| panic!("{addr}: {e}")))
    }

    #[test]
    fn public_addresses_pass_and_private_ones_are_named() {
        for (addr, expected) in [
            ("93.184.216.34", None),
            ("2606:4700::1111", None),
            ("10.1.2.3", Some("private")),
            ("169.254.169.254", Some("link-local (cloud metadata)")),
            ("100.100.1.1", Some("carrier-grade NAT (shared)")),
            ("fd00::1", Some("unique-local (private)")),
        ] {
            assert_eq!(classified(addr), expected, "{addr}");
        }
    }

    #[test]
    fn ipv6_forms_that_embed_an_ipv4_address_are_judged_by_it() {
        for (addr, expected) in [
            ("::ffff:127.0.0.1", Some("loopback")),
            ("64:ff9b::a9fe:a9fe", Some("NAT64 of a non-public IPv4")),
            ("64:ff9b::5db8:d822", None),
            ("2002:0a00:0001::", Some("6to4 of a non-public IPv4")),
            ("::10.0.0.1", Some("private")),
        ] {
            assert_eq!(classified(addr), expected, "{addr}");
        }
    }

    #[test]
    fn ip_spellings_are_normalised_before_the_check() {
        for url in [
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://0x7f.0.0.1/",
        ] {
            assert_eq!(
                refused(url),
                Refusal::Address("127.0.0.1".parse().unwrap(), "loopback"),
                "{url}"
            );
        }
    }

    #[test]
    fn schemes_credentials_and_local_names_are_refused_before_dns() {
        assert_eq!(
            refused("file:///etc/passwd"),
            Refusal::Scheme("file".into())
        );
        assert_eq!(refused("http://a:b@example.com/"), Refusal::Credentials);
        assert_eq!(
            refused("http://example.com@127.0.0.1/"),
            Refusal::Credentials
        );
        assert_eq!(
            refused("http://localhost./"),
            Refusal::LocalName("localhost".into())
        );
        assert_eq!(
            refused("http://x.localhost/"),
            Refusal::LocalName("x.localhost".into())
        );
    }

    #[test]
    fn localhost_is_reached_only_when_the_deployment_trusts_it_by_name() {
        let url = Url::parse("http://localhost:8080/wiki").unwrap();
        let trusting = FetchPolicy {
            trusted_private: vec!["localhost".into()],
            ..FetchPolicy::default()
        };
        let other = FetchPolicy {
            trusted_private: vec!["wiki.corp".into()],
            ..FetchPolicy::default()
        };
        assert_eq!(trusting.check_url(&url), Ok(()));
        assert_eq!(
            other.check_url(&url),
            Err(Refusal::LocalName("localhost".into()))
        );
    }

    #[test]
    fn a_trusted_ip_literal_is_reached_and_only_that_address() {
        let trusting = FetchPolicy {
            trusted_private: vec!["127.0.0.1".into(), "[::1]".into()],
            ..FetchPolicy::default()
        };
        let check = |u: &str| trusting.check_url(&Url::parse(u).unwrap());
        assert_eq!(check("http://127.0.0.1:8080/wiki"), Ok(()));
        assert_eq!(check("http://2130706433/"), Ok(()));
        assert_eq!(check("http://[::1]:9000/"), Ok(()));
        assert_eq!(
            check("http://127.0.0.2/"),
            Err(Refusal::Address("127.0.0.2".parse().unwrap(), "loopback"))
        );
        assert_eq!(
            check("http://169.254.169.254/"),
            Err(Refusal::Address(
                "169.254.169.254".parse().unwrap(),
                "link-local (cloud metadata)"
            ))
        );
        assert!(
            trusting
                .check_registrable("http://127.0.0.1:8080/in")
                .is_ok()
        );
        assert!(
            FetchPolicy::default()
                .check_url(&Url::parse("http://127.0.0.1/").unwrap())
                .is_err()
        );
    }

    #[test]
    fn allow_and_deny_lists_match_hosts_and_their_subdomains() {
        let policy = FetchPolicy {
            allow: vec!["example.com".into()],
            deny: vec!["secret.example.com".into()],
            ..FetchPolicy::default()
        };
        let check = |u: &str| policy.check_url(&Url::parse(u).unwrap());
        assert_eq!(check("https://docs.example.com/a"), Ok(()));
        assert_eq!(
            check("https://a.secret.example.com/"),
            Err(Refusal::Denied("a.secret.example.com".into()))
        );
        assert_eq!(
            check("https://notexample.com/"),
            Err(Refusal::NotAllowed("notexample.com".into()))
        );
    }

    #[test]
    fn a_trusted_name_may_resolve_privately_but_one_bad_answer_refuses_any_other_name() {
        let policy = FetchPolicy {
            trusted_private: vec!["wiki.corp".into()],
            ..FetchPolicy::default()
        };
        let private: IpAddr = "10.0.0.7".parse().unwrap();
        let public: IpAddr = "93.184.216.34".parse().unwrap();
        assert_eq!(policy.check_resolved("wiki.corp", &[private]), Ok(()));
        assert_eq!(
            policy.check_resolved("mixed.example", &[public, private]),
            Err(Refusal::Address(private, "private"))
        );
        assert_eq!(
            policy.check_resolved("nothing.example", &[]),
            Err(Refusal::Unresolved("nothing.example".into()))
        );
    }
}
