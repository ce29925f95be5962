//! The configuration's words for the proxies in front of shardgate: a network of trusted peers
//! ([`Cidr`], listed in `trusted_proxies`), and which forwarding header they write
//! ([`ForwardedHeader`]). What is done with them is [`crate::server::client_address`]'s.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A network in CIDR notation (`10.0.0.0/8`, `fd00::/8`), or one address (`192.0.2.7`, a `/32`
/// or `/128`). IPv4 peers that reach a dual-stack listener as IPv4-mapped IPv6 addresses
/// (`::ffff:10.1.2.3`) match the IPv4 networks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `address/prefix` or a bare address. Host bits set below the prefix
    /// (`10.0.0.1/8`) are refused: the intent (the network, or that one host) is unclear.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let network: IpAddr = address
            .parse()
            .map_err(|_| format!("{text:?} is not a network (CIDR such as 10.0.0.0/8 or fd00::/8) nor an address"))?;
        let network = network.to_canonical();
        let bits = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => bits,
            Some(prefix) => match prefix.parse::<u8>() {
                Ok(prefix) if prefix <= bits => prefix,
                _ => return Err(format!("{text:?}: the prefix length must be a number from 0 to {bits}")),
            },
        };
        let cidr = Self { network, prefix };
        if cidr.masked(network) != network {
            return Err(format!(
                "{text:?} has bits set past its /{prefix} prefix: write the network ({}/{prefix}) or the one address",
                cidr.masked(network)
            ));
        }
        Ok(cidr)
    }

    /// Whether `ip` is in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        ip.is_ipv4() == self.network.is_ipv4() && self.masked(ip) == self.network
    }

    /// `ip` with the bits past the prefix cleared (`ip` of the network's family).
    fn masked(&self, ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V4(v4) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
            }
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

impl Serialize for Cidr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Cidr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Cidr::parse(&text).map_err(de::Error::custom)
    }
}

/// `trusted_proxies` as a list (`["10.0.0.0/8", "fd00::/8"]`) or, as an environment variable
/// is easiest written, one string of comma-separated networks (`10.0.0.0/8,fd00::/8`).
pub fn cidr_list<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Cidr>, D::Error> {
    struct List;

    impl<'de> Visitor<'de> for List {
        type Value = Vec<Cidr>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of networks (CIDR), or one string of comma-separated networks")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
            text.split(',')
                .filter(|part| !part.trim().is_empty())
                .map(|part| Cidr::parse(part).map_err(E::custom))
                .collect()
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut list = Vec::new();
            while let Some(cidr) = seq.next_element::<Cidr>()? {
                list.push(cidr);
            }
            Ok(list)
        }
    }

    deserializer.deserialize_any(List)
}

/// Which forwarding header a trusted proxy writes, and so the one read from it. Only one is
/// read: a proxy that writes one passes the other through from its client unchanged, so reading
/// both would let a client choose its own address.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (what nginx, Envoy, HAProxy, Traefik and the
    /// cloud load balancers write).
    #[default]
    #[serde(rename = "x-forwarded-for")]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client, for="[2001:db8::1]:4711"`.
    #[serde(rename = "forwarded")]
    Forwarded,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn networks_contain_their_addresses_of_either_family() {
        let v4 = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(v4.contains(ip("10.255.1.2")));
        assert!(!v4.contains(ip("11.0.0.1")));
        assert!(v4.contains(ip("::ffff:10.1.2.3")), "an IPv4-mapped peer of a dual-stack listener");
        assert!(!v4.contains(ip("::a01:203")), "an IPv6 address is not in an IPv4 network");
        let v6 = Cidr::parse("fd00::/8").unwrap();
        assert!(v6.contains(ip("fd12:3456::1")));
        assert!(!v6.contains(ip("fe80::1")));
        assert!(!v6.contains(ip("10.0.0.1")));
        let one = Cidr::parse("127.0.0.1").unwrap();
        assert_eq!(one.to_string(), "127.0.0.1/32");
        assert!(one.contains(ip("127.0.0.1")) && !one.contains(ip("127.0.0.2")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("203.0.113.9")));
        assert!(Cidr::parse("::/0").unwrap().contains(ip("2001:db8::1")));
        assert_eq!(Cidr::parse("::1").unwrap().to_string(), "::1/128");
    }

    #[test]
    fn unclear_networks_are_refused_with_the_reason() {
        for (text, says) in [
            ("10.0.0.1/8", "10.0.0.0/8"),
            ("10.0.0.0/33", "from 0 to 32"),
            ("fd00::/129", "from 0 to 128"),
            ("10.0.0.0/x", "prefix length"),
            ("ten/8", "not a network"),
            ("", "not a network"),
        ] {
            let refused = Cidr::parse(text).unwrap_err();
            assert!(refused.contains(says), "{text}: {refused}");
        }
    }

    #[test]
    fn a_list_reads_from_a_sequence_or_a_comma_separated_string() {
        #[derive(Deserialize)]
        struct Holder {
            #[serde(deserialize_with = "cidr_list")]
            list: Vec<Cidr>,
        }
        let from_seq: Holder = serde_json::from_str(r#"{"list": ["10.0.0.0/8", "fd00::/8"]}"#).unwrap();
        let from_str: Holder = serde_json::from_str(r#"{"list": "10.0.0.0/8, fd00::/8"}"#).unwrap();
        assert_eq!(from_seq.list, from_str.list);
        assert_eq!(from_seq.list.len(), 2);
        let empty: Holder = serde_json::from_str(r#"{"list": ""}"#).unwrap();
        assert!(empty.list.is_empty());
        assert!(serde_json::from_str::<Holder>(r#"{"list": "10.0.0.0/8,nope"}"#).is_err());
    }
}
