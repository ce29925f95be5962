//! Who the client is: the address per-IP rate limits, the audit log and the access log name.
//!
//! A request's client is its TCP peer unless that peer is a trusted proxy
//! (`trusted_proxies`). Then, from right to left, each hop the proxies recorded is looked at:
//! first (with `proxy_protocol`) the PROXY header's source address
//! ([`crate::server::proxy_protocol`]), then the hops of the one forwarding header the proxies
//! write (`forwarded_header`: `X-Forwarded-For`, or RFC 7239 `Forwarded`'s `for=`). The client is
//! the first (rightmost) hop that is not itself a trusted proxy: everything to its left was
//! written by someone who is not trusted, the client included, so a client that sends its own
//! `X-Forwarded-For: 1.2.3.4` only adds a hop left of the one its proxy appended.
//!
//! A hop that names no address (`for=unknown`, an obfuscated `for=_hidden`, a malformed
//! element, too many hops) ends the walk at the last trusted hop's address: the proxy that wrote
//! it is the best known client. From an untrusted peer the headers are never read. With
//! `proxy_protocol`, a connection from a trusted proxy that sent no PROXY header is its own
//! client and its forwarding headers are ignored: an L4 proxy passes its clients' bytes through
//! unchanged, so they would be the client's own words.
//!
//! Reading the headers costs nothing when `trusted_proxies` is empty (every client is its
//! peer). Addresses are canonical: an IPv4 peer of a dual-stack listener (`::ffff:10.1.2.3`) is
//! `10.1.2.3`.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, HeaderValue, header};

use crate::config::proxies::{Cidr, ForwardedHeader};

/// The most hops of a forwarding header looked at; a longer chain of trusted proxies ends at the
/// last one looked at.
const MAX_HOPS: usize = 32;

/// A request's client address, in its extensions: put there by the connection that read it
/// ([`ProxyTrust::client_of`]) and, behind a standalone gatekeeper, replaced by the address the
/// gatekeeper vouched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

/// In a request's extensions on a backend behind a standalone gatekeeper (`serve --trusted`):
/// the client is the one the gatekeeper names in its internal credential, known once the front
/// door has verified it, so the edge leaves the span's `client` for the front door to record.
#[derive(Debug, Clone, Copy)]
pub struct ClientNamedByGatekeeper;

/// The address of a request's client: the one in its extensions, else its peer's, else the
/// unspecified address (a request that did not come through a connection, as in unit tests).
pub fn client_address(extensions: &axum::http::Extensions) -> IpAddr {
    if let Some(ClientAddress(ip)) = extensions.get::<ClientAddress>() {
        return *ip;
    }
    extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |axum::extract::ConnectInfo(peer)| peer.ip().to_canonical())
}

/// Which peers are trusted proxies and what they tell (`trusted_proxies`, `proxy_protocol`,
/// `forwarded_header`).
#[derive(Debug, Clone, Default)]
pub struct ProxyTrust {
    proxies: Vec<Cidr>,
    proxy_protocol: bool,
    header: ForwardedHeader,
    /// Requests come from a standalone gatekeeper, which names their client.
    behind_gatekeeper: bool,
}

/// What the PROXY header of a connection said, if the connection was read for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proxied {
    /// Not read for one: `proxy_protocol` is off, or the peer is not a trusted proxy.
    NotAsked,
    /// A trusted proxy's connection without a header, or with a header that names no address
    /// (LOCAL, or a family other than TCP over IPv4 or IPv6): the peer is the client.
    NoSource,
    /// The source address of the proxy's client.
    Source(IpAddr),
}

impl ProxyTrust {
    /// The trust of `proxies`; `proxy_protocol` needs at least one.
    pub fn new(proxies: Vec<Cidr>, proxy_protocol: bool, header: ForwardedHeader) -> anyhow::Result<Self> {
        if proxy_protocol && proxies.is_empty() {
            anyhow::bail!(
                "proxy_protocol is set without trusted_proxies: a PROXY header is read only from a trusted proxy; \
                 list the load balancers' networks in trusted_proxies"
            );
        }
        Ok(Self { proxies, proxy_protocol, header, behind_gatekeeper: false })
    }

    /// This trust on a backend behind a standalone gatekeeper (`serve --trusted`): each
    /// request's client is then the one the gatekeeper names ([`ClientNamedByGatekeeper`]).
    pub fn behind_gatekeeper(self, behind: bool) -> Self {
        Self { behind_gatekeeper: behind, ..self }
    }

    /// Whether requests' clients are named by a standalone gatekeeper.
    pub fn is_behind_gatekeeper(&self) -> bool {
        self.behind_gatekeeper
    }

    /// Whether `ip` is a trusted proxy.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.proxies.iter().any(|cidr| cidr.contains(ip))
    }

    /// Whether connections from `peer` begin with a PROXY header that is read.
    pub fn expects_proxy_header(&self, peer: IpAddr) -> bool {
        self.proxy_protocol && self.trusts(peer)
    }

    /// Whether connections are read for a PROXY header at all (to read a trusted proxy's, or to
    /// refuse anyone else's).
    pub fn proxy_protocol(&self) -> bool {
        self.proxy_protocol
    }

    /// The client of a request from `peer` with `headers`, on a connection whose PROXY header
    /// said `proxied`.
    pub fn client_of(&self, peer: IpAddr, proxied: Proxied, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if self.proxies.is_empty() || !self.trusts(peer) {
            return peer;
        }
        let last_trusted = match proxied {
            Proxied::NotAsked if self.proxy_protocol => return peer,
            Proxied::NotAsked => peer,
            Proxied::NoSource => return peer,
            Proxied::Source(source) => {
                let source = source.to_canonical();
                if !self.trusts(source) {
                    return source;
                }
                source
            }
        };
        let lines = match self.header {
            ForwardedHeader::XForwardedFor => headers.get_all(X_FORWARDED_FOR),
            ForwardedHeader::Forwarded => headers.get_all(header::FORWARDED),
        };
        self.rightmost_untrusted(lines.iter().rev(), last_trusted)
    }

    /// Walks the header's field lines (`lines`, last first), each one's hops right to left.
    fn rightmost_untrusted<'a>(
        &self,
        lines: impl Iterator<Item = &'a HeaderValue>,
        mut last_trusted: IpAddr,
    ) -> IpAddr {
        let mut looked_at = 0;
        for line in lines {
            let Ok(text) = line.to_str() else { return last_trusted };
            let hops = match self.header {
                ForwardedHeader::XForwardedFor => x_forwarded_for_hops(text),
                ForwardedHeader::Forwarded => forwarded_hops(text),
            };
            for hop in hops.into_iter().rev() {
                looked_at += 1;
                match hop {
                    Hop::Address(ip) if looked_at <= MAX_HOPS && self.trusts(ip) => last_trusted = ip,
                    Hop::Address(ip) if looked_at <= MAX_HOPS => return ip,
                    Hop::Address(_) | Hop::Unknown => return last_trusted,
                }
            }
        }
        last_trusted
    }
}

/// `X-Forwarded-For`.
const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// One hop a proxy recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hop {
    /// An address (canonical).
    Address(IpAddr),
    /// `unknown`, an obfuscated identifier, or an element that does not parse.
    Unknown,
}

/// The hops of one `X-Forwarded-For` field line, left to right: comma-separated addresses,
/// each bare, with a port (`192.0.2.1:443`), or bracketed (`[2001:db8::1]`, with a port or not).
fn x_forwarded_for_hops(text: &str) -> Vec<Hop> {
    text.split(',').map(|element| node(element.trim_matches([' ', '\t']), true)).collect()
}

/// The hops of one `Forwarded` field line (RFC 7239), left to right: each element's `for=`
/// node. An element without `for=`, or one that does not parse, is an unknown hop; a line whose
/// quoting does not parse is one unknown hop (nothing in it can be told apart).
fn forwarded_hops(text: &str) -> Vec<Hop> {
    let Some(elements) = split_outside_quotes(text, ',') else { return vec![Hop::Unknown] };
    elements
        .into_iter()
        .map(|element| {
            let Some(pairs) = split_outside_quotes(element, ';') else { return Hop::Unknown };
            let mut found = None;
            for pair in pairs {
                let pair = pair.trim_matches([' ', '\t']);
                let Some((name, value)) = pair.split_once('=') else {
                    if pair.is_empty() {
                        continue;
                    }
                    return Hop::Unknown;
                };
                if name.eq_ignore_ascii_case("for") {
                    if found.is_some() {
                        return Hop::Unknown;
                    }
                    found = Some(match unquote(value) {
                        Some(node_text) => node(&node_text, false),
                        None => Hop::Unknown,
                    });
                }
            }
            found.unwrap_or(Hop::Unknown)
        })
        .collect()
}

/// `text` split at `separator`s outside quoted strings (a backslash quotes the next character
/// inside them); `None` when a quoted string does not end.
fn split_outside_quotes(text: &str, separator: char) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (at, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == separator && !quoted => {
                parts.push(&text[start..at]);
                start = at + c.len_utf8();
            }
            _ => {}
        }
    }
    if quoted {
        return None;
    }
    parts.push(&text[start..]);
    Some(parts)
}

/// A parameter value: a token as it is, or a quoted string without its quotes and escapes.
fn unquote(value: &str) -> Option<String> {
    let Some(inner) = value.strip_prefix('"') else {
        return (!value.is_empty() && !value.contains('"')).then(|| value.to_owned());
    };
    let inner = inner.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '"' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// One node: an IPv4 address (with a port or not), a bracketed IPv6 address (with a port or
/// not), or, where `bare_ipv6` (in `X-Forwarded-For`, whose writers do not bracket), an IPv6
/// address as it is. Anything else (`unknown`, `_obfuscated`, garbage) is an unknown hop.
fn node(text: &str, bare_ipv6: bool) -> Hop {
    let address = if let Some(rest) = text.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else { return Hop::Unknown };
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return Hop::Unknown;
        }
        inside.parse::<std::net::Ipv6Addr>().map(IpAddr::V6).ok()
    } else if let Ok(ip) = text.parse::<std::net::Ipv4Addr>() {
        Some(IpAddr::V4(ip))
    } else if let Some((v4, port)) = text.split_once(':')
        && is_port(port)
        && let Ok(ip) = v4.parse::<std::net::Ipv4Addr>()
    {
        Some(IpAddr::V4(ip))
    } else if bare_ipv6 {
        text.parse::<std::net::Ipv6Addr>().map(IpAddr::V6).ok()
    } else {
        None
    };
    address.map_or(Hop::Unknown, |ip| Hop::Address(ip.to_canonical()))
}

/// A port: decimal digits (RFC 7239 also allows an obfuscated `_port`, which says nothing
/// about the address before it).
fn is_port(text: &str) -> bool {
    !text.is_empty() && (text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit()) || text.starts_with('_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn trust(proxies: &[&str], header: ForwardedHeader) -> ProxyTrust {
        ProxyTrust::new(proxies.iter().map(|p| Cidr::parse(p).unwrap()).collect(), false, header).unwrap()
    }

    fn headers(name: &'static str, lines: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for line in lines {
            map.append(name, HeaderValue::from_str(line).unwrap());
        }
        map
    }

    const XFF: ForwardedHeader = ForwardedHeader::XForwardedFor;
    const FWD: ForwardedHeader = ForwardedHeader::Forwarded;

    #[test]
    fn the_rightmost_untrusted_hop_of_x_forwarded_for_is_the_client() {
        let trust = trust(&["10.0.0.0/8"], XFF);
        let client = |peer: &str, lines: &[&str]| {
            trust.client_of(ip(peer), Proxied::NotAsked, &headers("x-forwarded-for", lines)).to_string()
        };
        assert_eq!(client("10.0.0.1", &["203.0.113.7"]), "203.0.113.7");
        assert_eq!(
            client("10.0.0.1", &["1.1.1.1, 203.0.113.7"]),
            "203.0.113.7",
            "the client's own spoof is left of it"
        );
        assert_eq!(client("10.0.0.1", &["198.51.100.2, 203.0.113.7, 10.1.1.1"]), "203.0.113.7", "past a trusted hop");
        assert_eq!(client("10.0.0.1", &["1.1.1.1", "203.0.113.7,10.2.2.2"]), "203.0.113.7", "lines are one list");
        assert_eq!(client("10.0.0.1", &["10.3.3.3, 10.2.2.2"]), "10.3.3.3", "every hop trusted: the leftmost");
        assert_eq!(client("10.0.0.1", &[]), "10.0.0.1", "no header: the proxy itself");
        assert_eq!(client("192.0.2.50", &["203.0.113.7"]), "192.0.2.50", "an untrusted peer's header is ignored");
        assert_eq!(client("::ffff:10.0.0.1", &["203.0.113.7"]), "203.0.113.7", "an IPv4-mapped trusted peer");
        assert_eq!(client("::ffff:192.0.2.50", &[]), "192.0.2.50", "addresses are canonical");
        assert_eq!(client("10.0.0.1", &["203.0.113.7:5123"]), "203.0.113.7", "with a port");
        assert_eq!(client("10.0.0.1", &["2001:db8::1"]), "2001:db8::1", "bare IPv6");
        assert_eq!(client("10.0.0.1", &["[2001:db8::1]:443"]), "2001:db8::1", "bracketed IPv6 with a port");
    }

    #[test]
    fn an_unknown_or_malformed_hop_stops_at_the_last_trusted_one() {
        let trust = trust(&["10.0.0.0/8"], XFF);
        let client = |lines: &[&str]| {
            trust.client_of(ip("10.0.0.1"), Proxied::NotAsked, &headers("x-forwarded-for", lines)).to_string()
        };
        for malformed in ["unknown", "", " , ", "203.0.113.7 extra", "[2001:db8::1", "999.1.1.1", "1.2.3.4:99999x"] {
            assert_eq!(client(&[malformed]), "10.0.0.1", "{malformed:?}");
        }
        assert_eq!(client(&["203.0.113.7, garbage, 10.5.5.5"]), "10.5.5.5", "the last trusted hop before it");
        let mut not_text = HeaderMap::new();
        not_text.insert("x-forwarded-for", HeaderValue::from_bytes(b"\xff203.0.113.7").unwrap());
        assert_eq!(trust.client_of(ip("10.0.0.1"), Proxied::NotAsked, &not_text), ip("10.0.0.1"));
        let long = vec!["10.9.9.9"; 40].join(",");
        assert_eq!(client(&[&format!("203.0.113.7,{long}")]), "10.9.9.9", "at most 32 hops are looked at");
    }

    #[test]
    fn forwarded_for_nodes_are_read_as_rfc_7239_writes_them() {
        let trust = trust(&["10.0.0.0/8", "fd00::/8"], FWD);
        let client = |peer: &str, lines: &[&str]| {
            trust.client_of(ip(peer), Proxied::NotAsked, &headers("forwarded", lines)).to_string()
        };
        assert_eq!(client("10.0.0.1", &["for=192.0.2.60;proto=http;by=203.0.113.43"]), "192.0.2.60");
        assert_eq!(client("10.0.0.1", &[r#"for="[2001:db8:cafe::17]:4711""#]), "2001:db8:cafe::17");
        assert_eq!(client("10.0.0.1", &[r#"For="[2001:db8::1]""#]), "2001:db8::1", "names are case-insensitive");
        assert_eq!(client("fd00::1", &[r#"for="192.0.2.43:80""#]), "192.0.2.43", "a quoted IPv4 with a port");
        assert_eq!(client("10.0.0.1", &["for=1.1.1.1, for=198.51.100.17;by=10.0.0.1, for=10.1.1.1"]), "198.51.100.17");
        assert_eq!(
            client("10.0.0.1", &[r#"for=1.1.1.1;x="a,b;c", for=198.51.100.17"#]),
            "198.51.100.17",
            "quoted separators"
        );
        for unknown in [
            "for=unknown",
            "for=_hidden",
            r#"for="_gazonk""#,
            "proto=https",
            "for=2001:db8::1",
            r#"for="[2001:db8::1"#,
            r#"for="unterminated"#,
            "for=1.2.3.4;for=5.6.7.8",
            "for",
        ] {
            assert_eq!(client("10.0.0.1", &[unknown]), "10.0.0.1", "{unknown}");
        }
        assert_eq!(client("10.0.0.1", &["for=198.51.100.1, for=_hidden, for=10.4.4.4"]), "10.4.4.4");
        assert_eq!(client("192.0.2.9", &["for=198.51.100.1"]), "192.0.2.9", "an untrusted peer's header is ignored");
        let both = {
            let mut map = headers("forwarded", &["for=198.51.100.1"]);
            map.insert("x-forwarded-for", HeaderValue::from_static("203.0.113.7"));
            map
        };
        assert_eq!(trust.client_of(ip("10.0.0.1"), Proxied::NotAsked, &both), ip("198.51.100.1"), "only Forwarded");
        let xff_trust = self::trust(&["10.0.0.0/8"], XFF);
        assert_eq!(xff_trust.client_of(ip("10.0.0.1"), Proxied::NotAsked, &both), ip("203.0.113.7"), "only XFF");
    }

    #[test]
    fn with_the_proxy_protocol_the_headers_count_only_behind_a_trusted_source() {
        let proxies = vec![Cidr::parse("10.0.0.0/8").unwrap()];
        let trust = ProxyTrust::new(proxies, true, XFF).unwrap();
        let spoofed = headers("x-forwarded-for", &["198.51.100.1"]);
        let peer = ip("10.0.0.1");
        assert_eq!(trust.client_of(peer, Proxied::Source(ip("203.0.113.7")), &spoofed), ip("203.0.113.7"));
        assert_eq!(trust.client_of(peer, Proxied::NoSource, &spoofed), peer, "LOCAL, or no header: the proxy");
        assert_eq!(trust.client_of(peer, Proxied::NotAsked, &spoofed), peer);
        assert_eq!(
            trust.client_of(peer, Proxied::Source(ip("10.7.7.7")), &spoofed),
            ip("198.51.100.1"),
            "an L7 proxy behind the L4 one"
        );
        assert_eq!(trust.client_of(ip("192.0.2.1"), Proxied::NotAsked, &spoofed), ip("192.0.2.1"));
        assert!(ProxyTrust::new(Vec::new(), true, XFF).unwrap_err().to_string().contains("trusted_proxies"));
    }

    #[test]
    fn without_trusted_proxies_the_client_is_the_peer() {
        let trust = ProxyTrust::default();
        let spoofed = headers("x-forwarded-for", &["198.51.100.1"]);
        assert_eq!(trust.client_of(ip("127.0.0.1"), Proxied::NotAsked, &spoofed), ip("127.0.0.1"));
        let mut extensions = axum::http::Extensions::new();
        assert_eq!(client_address(&extensions), ip("0.0.0.0"));
        extensions.insert(axum::extract::ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 4000))));
        assert_eq!(client_address(&extensions), ip("127.0.0.1"));
        extensions.insert(ClientAddress(ip("203.0.113.7")));
        assert_eq!(client_address(&extensions), ip("203.0.113.7"));
    }
}
