//! The address a datagram is sent to (`--measure udp:target=`, `--load net:target=`): one
//! parser, which refuses what no datagram can reach — port 0, an unspecified address (0.0.0.0,
//! `::`), the limited broadcast address, a multicast group — while the
//! options are parsed, never after the run began.

use super::Error;
use std::net::{IpAddr, SocketAddr};

/// Whether an answer must come back from the address (a round trip: a multicast group never
/// answers as one host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Datagrams sent one way (a load's flood).
    OneWay,
    /// Datagrams sent and answered (the UDP probe's echo).
    RoundTrip,
}

/// `text` as the address datagrams go to; `Err`: why not, for a message that then gives an
/// example (`target=TEXT ...`).
pub fn send_target(text: &str, to: Use) -> Result<SocketAddr, Error> {
    send_target_text(text, to).map_err(Error::Invalid)
}

/// [`send_target`], its failure as text.
fn send_target_text(text: &str, to: Use) -> Result<SocketAddr, String> {
    let addr: SocketAddr = text.parse().map_err(|_| format!("target={text} is not ADDR:PORT"))?;
    if addr.port() == 0 {
        return Err(format!("target={text}: port 0 is no port a datagram can be sent to; give the port (1-65535)"));
    }
    // (an IPv4-mapped IPv6 address judged as the IPv4 address it is)
    let ip = addr.ip().to_canonical();
    if ip.is_unspecified() {
        return Err(format!("target={text}: {ip} is no host's address (it means 'any'); give the host's address"));
    }
    if ip == IpAddr::from([255, 255, 255, 255]) {
        return Err(format!("target={text}: the broadcast address is not taken; give one host's address"));
    }
    if ip.is_multicast() {
        return Err(format!(
            "target={text}: {} is a multicast group, {}; give one host's address",
            ip,
            if to == Use::RoundTrip {
                "which cannot answer as one echo"
            } else {
                "whose flood would reach every host that joined it"
            }
        ));
    }
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_no_datagram_can_reach_is_refused_with_its_reason() {
        for (text, to, word) in [
            ("127.0.0.1:0", Use::OneWay, "port 0"),
            ("[::1]:0", Use::RoundTrip, "port 0"),
            ("0.0.0.0:9000", Use::OneWay, "any"),
            ("[::]:9000", Use::RoundTrip, "any"),
            ("[::ffff:0.0.0.0]:9000", Use::OneWay, "any"),
            ("[::ffff:255.255.255.255]:9000", Use::OneWay, "broadcast"),
            ("255.255.255.255:9000", Use::OneWay, "broadcast"),
            ("239.1.2.3:9000", Use::RoundTrip, "multicast"),
            ("[ff02::1]:9000", Use::RoundTrip, "multicast"),
            ("224.0.0.1:9", Use::OneWay, "multicast"),
            ("[::ffff:224.0.0.1]:9", Use::OneWay, "multicast"),
            ("nowhere", Use::OneWay, "not ADDR:PORT"),
            ("10.0.0.1", Use::OneWay, "not ADDR:PORT"),
            ("10.0.0.1:65536", Use::OneWay, "not ADDR:PORT"),
        ] {
            let e = send_target(text, to).unwrap_err();
            assert!(e.contains(word), "{text}: {e}");
        }
        for (text, to) in [("127.0.0.1:9000", Use::RoundTrip), ("[::1]:1", Use::RoundTrip), ("192.168.1.2:65535", Use::OneWay)] {
            assert_eq!(send_target(text, to).unwrap(), text.parse::<SocketAddr>().unwrap());
        }
    }
}
