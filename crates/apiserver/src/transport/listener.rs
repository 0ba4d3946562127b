//! Where the server listens, and the process limits that decide how many clients it can hold.
//!
//! * `--addr` takes what Go's `net.Listen("tcp", addr)` takes: `host:port`, `:port` (every
//!   interface, IPv6 and IPv4 on one dual-stack socket), `[::1]:port`, `localhost:port` (the
//!   name's first IPv4 address, else its first address), port 0 for any free port.
//! * The listen backlog is at least [`MIN_BACKLOG`]: thousands of informers reconnecting at
//!   once (a restart) must queue, not be refused. tokio's default (1024) lost connections in a
//!   5,000-watcher burst. Like Go, a larger `net.core.somaxconn` is used in full.
//! * Every watch holds a socket, so the soft limit on open files is raised to the hard limit at
//!   startup (as Go programs have done since Go 1.19).

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::str::FromStr;

use socket2::{Domain, Protocol, Socket, Type};

/// The smallest listen backlog asked of the kernel.
pub const MIN_BACKLOG: i32 = 4096;

/// A listen address as given on the command line, its host resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenAddr {
    text: String,
    ip: IpAddr,
    port: u16,
    /// The host was empty: every interface.
    any_interface: bool,
}

impl ListenAddr {
    /// The address to bind: the IP given or resolved; `::` for an empty host.
    pub fn ip(&self) -> IpAddr {
        self.ip
    }

    /// The port asked for (0: any free port).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether this listens on every interface (an empty or unspecified host).
    pub fn is_any_interface(&self) -> bool {
        self.any_interface || self.ip.is_unspecified()
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for ListenAddr {
    type Err = String;

    fn from_str(text: &str) -> Result<ListenAddr, String> {
        let (host, port) = split_host_port(text)?;
        let port: u16 = port.parse().map_err(|_| format!("address {text}: invalid port {port:?}"))?;
        let (ip, any_interface) = if host.is_empty() {
            (IpAddr::V6(Ipv6Addr::UNSPECIFIED), true)
        } else if let Ok(ip) = host.parse::<IpAddr>() {
            (ip, false)
        } else {
            let resolved: Vec<SocketAddr> = (host, port)
                .to_socket_addrs()
                .map_err(|e| format!("address {text}: cannot resolve {host}: {e}"))?
                .collect();
            let chosen = resolved.iter().find(|a| a.is_ipv4()).or(resolved.first());
            let chosen = chosen.ok_or_else(|| format!("address {text}: {host} has no address"))?;
            (chosen.ip(), false)
        };
        Ok(ListenAddr { text: text.to_string(), ip, port, any_interface })
    }
}

/// Go's `net.SplitHostPort`: `host:port`, `[host]:port`, `:port`.
fn split_host_port(text: &str) -> Result<(&str, &str), String> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(|| format!("address {text}: missing ']' in address"))?;
        let port = after.strip_prefix(':').ok_or_else(|| format!("address {text}: missing port in address"))?;
        return Ok((host, port));
    }
    let (host, port) = text.rsplit_once(':').ok_or_else(|| format!("address {text}: missing port in address"))?;
    if host.contains(':') {
        return Err(format!("address {text}: too many colons in address"));
    }
    Ok((host, port))
}

/// A bound listener and where local clients reach it.
pub struct Listening {
    /// The bound socket.
    pub listener: tokio::net::TcpListener,
    /// The bound address (`[::]:8080` for every interface).
    pub local: SocketAddr,
    /// An address a client on this machine can connect to: the bound one, or loopback when
    /// bound to every interface.
    pub reachable: SocketAddr,
}

/// Binds `addr` with a backlog of at least [`MIN_BACKLOG`] (must run inside a tokio runtime).
pub fn bind(addr: &ListenAddr) -> io::Result<Listening> {
    let backlog = backlog();
    let socket = if addr.any_interface {
        // Dual-stack `[::]`, as Go listens for an empty host; IPv4 alone where IPv6 is missing.
        bind_socket(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), addr.port), backlog).or_else(|e| {
            tracing::debug!(error = %e, "no dual-stack socket; listening on IPv4 only");
            bind_socket(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), addr.port), backlog)
        })?
    } else {
        bind_socket(SocketAddr::new(addr.ip, addr.port), backlog)?
    };
    let listener = tokio::net::TcpListener::from_std(socket.into())?;
    let local = listener.local_addr()?;
    let reachable = if local.ip().is_unspecified() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), local.port())
    } else {
        local
    };
    Ok(Listening { listener, local, reachable })
}

fn bind_socket(at: SocketAddr, backlog: i32) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(at), Type::STREAM, Some(Protocol::TCP))?;
    if at.is_ipv6() && at.ip().is_unspecified() {
        socket.set_only_v6(false)?;
    }
    // A restart may bind the port again while the old connections are in TIME_WAIT.
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&at.into())?;
    socket.listen(backlog)?;
    Ok(socket)
}

/// `max(MIN_BACKLOG, somaxconn)`; warns when the kernel caps it below [`MIN_BACKLOG`].
fn backlog() -> i32 {
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn").ok().and_then(|s| s.trim().parse().ok());
    match somaxconn {
        Some(n) if n < MIN_BACKLOG => {
            tracing::warn!(
                somaxconn = n,
                wanted = MIN_BACKLOG,
                "the kernel caps the listen backlog at net.core.somaxconn: bursts of more simultaneous connections may be dropped (raise it with sysctl -w net.core.somaxconn={MIN_BACKLOG})"
            );
            MIN_BACKLOG
        }
        Some(n) => n,
        None => MIN_BACKLOG,
    }
}

/// The soft limit on open files before and after raising it to the hard limit (`None` if it
/// already was there).
#[allow(unsafe_code)]
pub fn raise_open_file_limit() -> io::Result<Option<(libc::rlim_t, libc::rlim_t)>> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut target = limit.rlim_max;
    if target == libc::RLIM_INFINITY {
        // Linux refuses more than fs.nr_open even when the hard limit is "unlimited".
        target =
            std::fs::read_to_string("/proc/sys/fs/nr_open").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(1 << 20);
    }
    if limit.rlim_cur >= target {
        return Ok(None);
    }
    let old = limit.rlim_cur;
    limit.rlim_cur = target;
    // SAFETY: setrlimit reads the struct we pass.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Some((old, target)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ListenAddr, String> {
        text.parse()
    }

    #[test]
    fn go_style_addresses() {
        let any = parse(":8080").unwrap();
        assert!(any.is_any_interface());
        assert_eq!((any.ip(), any.port()), (IpAddr::V6(Ipv6Addr::UNSPECIFIED), 8080));
        assert_eq!(parse(":0").unwrap().port(), 0);
        let v6 = parse("[::1]:0").unwrap();
        assert_eq!(v6.ip(), IpAddr::V6(Ipv6Addr::LOCALHOST));
        assert!(!v6.is_any_interface());
        assert_eq!(parse("127.0.0.1:8080").unwrap().ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert!(parse("0.0.0.0:1").unwrap().is_any_interface());
        // A name resolves to its first IPv4 address, as Go's listener picks.
        assert_eq!(parse("localhost:8080").unwrap().ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(parse("localhost:8080").unwrap().to_string(), "localhost:8080");
    }

    #[test]
    fn malformed_addresses_say_why() {
        assert!(parse("8080").unwrap_err().contains("missing port in address"));
        assert!(parse("::1:80").unwrap_err().contains("too many colons"));
        assert!(parse("[::1]").unwrap_err().contains("missing port"));
        assert!(parse("[::1:80").unwrap_err().contains("missing ']'"));
        assert!(parse(":http").unwrap_err().contains("invalid port"));
        assert!(parse(":65536").unwrap_err().contains("invalid port"));
    }

    #[tokio::test]
    async fn every_interface_is_reachable_on_loopback() {
        let listening = bind(&parse(":0").unwrap()).unwrap();
        assert!(listening.local.ip().is_unspecified());
        assert!(listening.reachable.ip().is_loopback());
        let port = listening.reachable.port();
        let accept = tokio::spawn(async move { listening.listener.accept().await.map(|_| ()) });
        tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        accept.await.unwrap().unwrap();
    }
}
