//! The PROXY protocol, version 2 (HAProxy's specification, as AWS NLB, GCP, Azure, HAProxy and
//! Envoy write it): the binary header an L4 load balancer sends before its client's bytes, naming
//! the client's address.
//!
//! ```text
//! 12 bytes  signature \r\n\r\n\0\r\nQUIT\n
//!  1 byte   version (2) and command (0 LOCAL, 1 PROXY)
//!  1 byte   family (0 unspecified, 1 IPv4, 2 IPv6, 3 Unix) and transport (0, 1 stream, 2 datagram)
//!  2 bytes  length of what follows, big-endian
//!  then     source address, destination address, source port, destination port, then TLVs
//! ```
//!
//! Only what names a client is taken: PROXY over TCP or UDP on IPv4 or IPv6 gives its source
//! address; LOCAL (the proxy's own health check), the unspecified family and Unix sockets give
//! none (the peer is then the client). TLVs are skipped. A header longer than
//! [`MAX_HEADER_BYTES`] is refused, so a peer cannot make the server buffer 64 KiB per
//! connection. [`read_proxy_header`] reads it off a socket (looking at the first twelve bytes
//! without taking them); the connection's header deadline around that read is
//! [`crate::server::connections`]'s.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use tokio::net::TcpStream;

use crate::server::client_address::Proxied;

/// The signature every version 2 header begins with. No HTTP request or TLS handshake begins
/// with its first byte pair followed by the rest, so a connection is told apart by its first
/// twelve bytes.
pub const SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";

/// The fixed part of a header: the signature, version and command, family, and length.
pub const FIXED_BYTES: usize = 16;

/// The longest header taken, fixed part included: addresses (36 bytes for IPv6) and TLVs
/// (a cloud load balancer's endpoint id, a TLS summary) fit many times over.
pub const MAX_HEADER_BYTES: usize = 1024;

/// What a header says about the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyHeader {
    /// The client's source address (PROXY over IPv4 or IPv6).
    Source(IpAddr),
    /// No client address: LOCAL (the proxy's own connection), the unspecified family, or a Unix
    /// socket.
    NoSource,
}

/// Why a header is refused (the connection is then closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProxyHeaderError {
    /// The first bytes are not the signature.
    #[error("not a PROXY protocol v2 signature")]
    NotSignature,
    /// The version is not 2, or the command is neither LOCAL nor PROXY.
    #[error("unsupported PROXY protocol version or command {0:#04x}")]
    VersionOrCommand(u8),
    /// The family and transport byte is not one the specification defines.
    #[error("unsupported PROXY protocol address family {0:#04x}")]
    Family(u8),
    /// The length is shorter than the family's addresses.
    #[error("the PROXY header's addresses are cut short")]
    Short,
    /// The header is longer than [`MAX_HEADER_BYTES`].
    #[error("the PROXY header is longer than {MAX_HEADER_BYTES} bytes")]
    TooLong,
}

/// How many bytes follow the fixed part `fixed` (its length field), once the signature, version
/// and command are checked; refuses a header longer than [`MAX_HEADER_BYTES`].
pub fn remaining_length(fixed: &[u8; FIXED_BYTES]) -> Result<usize, ProxyHeaderError> {
    if fixed[..12] != SIGNATURE {
        return Err(ProxyHeaderError::NotSignature);
    }
    if !matches!(fixed[12], 0x20 | 0x21) {
        return Err(ProxyHeaderError::VersionOrCommand(fixed[12]));
    }
    let length = usize::from(u16::from_be_bytes([fixed[14], fixed[15]]));
    if FIXED_BYTES + length > MAX_HEADER_BYTES {
        return Err(ProxyHeaderError::TooLong);
    }
    Ok(length)
}

/// What the header of fixed part `fixed` and the `rest` of its [`remaining_length`] says.
pub fn parse(fixed: &[u8; FIXED_BYTES], rest: &[u8]) -> Result<ProxyHeader, ProxyHeaderError> {
    let length = remaining_length(fixed)?;
    if rest.len() != length {
        return Err(ProxyHeaderError::Short);
    }
    let local = fixed[12] == 0x20;
    let family = fixed[13];
    // The source address's length, for the families that have one.
    let source_length = match family {
        0x00 => None,
        0x11 | 0x12 => Some(4),
        0x21 | 0x22 => Some(16),
        0x31 | 0x32 => None,
        other => return Err(ProxyHeaderError::Family(other)),
    };
    if local {
        // The receiver uses its own connection's addresses, whatever the family says.
        return Ok(ProxyHeader::NoSource);
    }
    let Some(source_length) = source_length else { return Ok(ProxyHeader::NoSource) };
    // Source and destination addresses, then the two ports.
    if rest.len() < 2 * source_length + 4 {
        return Err(ProxyHeaderError::Short);
    }
    let source = match source_length {
        4 => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(&rest[..4]).expect("four bytes"))),
        _ => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&rest[..16]).expect("sixteen bytes"))),
    };
    Ok(ProxyHeader::Source(source.to_canonical()))
}

/// While a connection's first bytes are a beginning of the PROXY signature but not all of it,
/// how long to wait before looking again.
const PEEK_AGAIN: Duration = Duration::from_millis(10);

/// Why a connection's PROXY header is refused.
#[derive(Debug, thiserror::Error)]
pub enum PreambleRefused {
    /// A peer that is not a trusted proxy sent one.
    #[error("a PROXY header from a peer that is not a trusted proxy")]
    Untrusted,
    /// It does not parse, or is too long.
    #[error(transparent)]
    Malformed(#[from] ProxyHeaderError),
}

/// Reads a PROXY header from the beginning of `stream` if there is one, and only it: from a
/// `trusted` proxy, what it says ([`Proxied::NoSource`] without one); from another peer, nothing
/// ([`Proxied::NotAsked`]) or a refusal.
pub async fn read_proxy_header(stream: &mut TcpStream, trusted: bool) -> io::Result<Result<Proxied, PreambleRefused>> {
    use tokio::io::AsyncReadExt;
    if !begins_with_proxy_signature(stream).await? {
        return Ok(Ok(if trusted { Proxied::NoSource } else { Proxied::NotAsked }));
    }
    if !trusted {
        return Ok(Err(PreambleRefused::Untrusted));
    }
    let mut fixed = [0u8; FIXED_BYTES];
    stream.read_exact(&mut fixed).await?;
    let length = match remaining_length(&fixed) {
        Ok(length) => length,
        Err(refused) => return Ok(Err(refused.into())),
    };
    let mut rest = vec![0u8; length];
    stream.read_exact(&mut rest).await?;
    Ok(parse(&fixed, &rest).map_err(PreambleRefused::from).map(|header| match header {
        ProxyHeader::Source(ip) => Proxied::Source(ip),
        ProxyHeader::NoSource => Proxied::NoSource,
    }))
}

/// Whether `stream`'s first bytes are the PROXY v2 signature, looked at without taking them.
/// While they are only a beginning of it, looks again every [`PEEK_AGAIN`] (the caller's
/// deadline bounds the wait); fails when the peer closes first.
async fn begins_with_proxy_signature(stream: &TcpStream) -> io::Result<bool> {
    let signature = SIGNATURE;
    let mut first = [0u8; 12];
    loop {
        let n = stream.peek(&mut first).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if first[..n] != signature[..n] {
            return Ok(false);
        }
        if n == signature.len() {
            return Ok(true);
        }
        tokio::time::sleep(PEEK_AGAIN).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PROXY header naming `source` (and `destination`), with `tlv` after the addresses.
    fn encode(source: std::net::SocketAddr, destination: std::net::SocketAddr, tlv: &[u8]) -> Vec<u8> {
        let mut header = SIGNATURE.to_vec();
        header.push(0x21);
        let mut addresses = Vec::new();
        match (source, destination) {
            (std::net::SocketAddr::V4(s), std::net::SocketAddr::V4(d)) => {
                header.push(0x11);
                addresses.extend_from_slice(&s.ip().octets());
                addresses.extend_from_slice(&d.ip().octets());
            }
            (s, d) => {
                header.push(0x21);
                let v6 = |ip: IpAddr| match ip {
                    IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                    IpAddr::V6(v6) => v6,
                };
                addresses.extend_from_slice(&v6(s.ip()).octets());
                addresses.extend_from_slice(&v6(d.ip()).octets());
            }
        }
        addresses.extend_from_slice(&source.port().to_be_bytes());
        addresses.extend_from_slice(&destination.port().to_be_bytes());
        addresses.extend_from_slice(tlv);
        header.extend_from_slice(&u16::try_from(addresses.len()).unwrap_or(u16::MAX).to_be_bytes());
        header.extend_from_slice(&addresses);
        header
    }

    fn split(header: &[u8]) -> ([u8; FIXED_BYTES], &[u8]) {
        (header[..FIXED_BYTES].try_into().unwrap(), &header[FIXED_BYTES..])
    }

    fn read(header: &[u8]) -> Result<ProxyHeader, ProxyHeaderError> {
        let (fixed, rest) = split(header);
        parse(&fixed, rest)
    }

    #[test]
    fn tcp4_and_tcp6_headers_name_their_source() {
        let v4 = encode("203.0.113.7:5123".parse().unwrap(), "10.0.0.5:8080".parse().unwrap(), &[]);
        assert_eq!(v4.len(), 28);
        assert_eq!(read(&v4), Ok(ProxyHeader::Source("203.0.113.7".parse().unwrap())));
        let v6 = encode("[2001:db8::1]:5123".parse().unwrap(), "[fd00::5]:8080".parse().unwrap(), &[]);
        assert_eq!(v6.len(), 52);
        assert_eq!(read(&v6), Ok(ProxyHeader::Source("2001:db8::1".parse().unwrap())));
        let mapped = encode("[::ffff:198.51.100.4]:1".parse().unwrap(), "[::1]:2".parse().unwrap(), &[]);
        assert_eq!(read(&mapped), Ok(ProxyHeader::Source("198.51.100.4".parse().unwrap())), "canonical");
        // A TLV (PP2_TYPE_AWS, 0xEA) after the addresses is skipped.
        let tlv = [0xEA, 0x00, 0x05, 0x01, b'v', b'p', b'c', b'e'];
        let with_tlv = encode("203.0.113.7:1".parse().unwrap(), "10.0.0.5:2".parse().unwrap(), &tlv);
        assert_eq!(read(&with_tlv), Ok(ProxyHeader::Source("203.0.113.7".parse().unwrap())));
        let (fixed, _) = split(&with_tlv);
        assert_eq!(remaining_length(&fixed), Ok(12 + tlv.len()));
    }

    #[test]
    fn local_unspecified_and_unix_headers_name_no_source() {
        let mut local = encode("203.0.113.7:1".parse().unwrap(), "10.0.0.5:2".parse().unwrap(), &[]);
        local[12] = 0x20;
        assert_eq!(read(&local), Ok(ProxyHeader::NoSource), "LOCAL, whatever its addresses");
        let mut unspecified = SIGNATURE.to_vec();
        unspecified.extend_from_slice(&[0x21, 0x00, 0x00, 0x00]);
        assert_eq!(read(&unspecified), Ok(ProxyHeader::NoSource));
        let mut unix = SIGNATURE.to_vec();
        unix.extend_from_slice(&[0x21, 0x31, 0x00, 0xd8]);
        unix.extend_from_slice(&[0; 216]);
        assert_eq!(read(&unix), Ok(ProxyHeader::NoSource));
    }

    #[test]
    fn malformed_headers_are_refused() {
        let good = encode("203.0.113.7:1".parse().unwrap(), "10.0.0.5:2".parse().unwrap(), &[]);
        let with = |at: usize, byte: u8| {
            let mut header = good.clone();
            header[at] = byte;
            header
        };
        assert_eq!(read(&with(0, b'G')), Err(ProxyHeaderError::NotSignature));
        assert_eq!(read(&with(12, 0x11)), Err(ProxyHeaderError::VersionOrCommand(0x11)), "version 1");
        assert_eq!(read(&with(12, 0x22)), Err(ProxyHeaderError::VersionOrCommand(0x22)), "command 2");
        assert_eq!(read(&with(13, 0x13)), Err(ProxyHeaderError::Family(0x13)));
        assert_eq!(read(&with(13, 0x41)), Err(ProxyHeaderError::Family(0x41)));
        // IPv6 addresses announced in an IPv4-sized body.
        assert_eq!(read(&with(13, 0x21)), Err(ProxyHeaderError::Short));
        // The body is not as long as the length says.
        let (fixed, rest) = split(&good);
        assert_eq!(parse(&fixed, &rest[..11]), Err(ProxyHeaderError::Short));
        // Too long: refused from the fixed part alone, before anything more is read.
        let mut long = good.clone();
        long[14..16].copy_from_slice(&u16::try_from(MAX_HEADER_BYTES - FIXED_BYTES + 1).unwrap().to_be_bytes());
        assert_eq!(remaining_length(&split(&long).0), Err(ProxyHeaderError::TooLong));
        let mut longest = good.clone();
        longest[14..16].copy_from_slice(&u16::try_from(MAX_HEADER_BYTES - FIXED_BYTES).unwrap().to_be_bytes());
        assert_eq!(remaining_length(&split(&longest).0), Ok(MAX_HEADER_BYTES - FIXED_BYTES));
        let mut max = good.clone();
        max[14..16].copy_from_slice(&[0xff, 0xff]);
        assert_eq!(remaining_length(&split(&max).0), Err(ProxyHeaderError::TooLong));
    }

    #[test]
    fn neither_http_nor_tls_begins_with_the_signature() {
        for start in [&b"GET / HTTP/1.1\r\n"[..], &b"\r\nGET / HTTP/1.1"[..], &[0x16, 0x03, 0x01, 0x02, 0x00][..]] {
            let n = start.len().min(12);
            assert_ne!(&start[..n], &SIGNATURE[..n]);
        }
    }
}
