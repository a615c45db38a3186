//! Fleet updates (`[fleet]`): the hawkBit server (its device API, DDI) the box polls for RAUC
//! bundles, who the box is to it and how it proves it, and whether an update may install while
//! the box is on air. Off until a server is named.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Secret;

/// `[fleet]` in the file.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FleetConfig {
    /// The update server's address (`https://HOST[:PORT][/PATH]`, or `http://` on a network of
    /// one's own); empty: fleet updates off.
    pub server: String,
    /// The server's tenant (hawkBit's and gooseBit's default is `DEFAULT`).
    pub tenant: String,
    /// This box's controller id on the server; empty: the box's name.
    pub controller_id: String,
    /// The target security token the server gave this box (`Authorization: TargetToken`);
    /// empty for none.
    pub target_token: String,
    /// The tenant's gateway security token (`Authorization: GatewayToken`), instead of a target
    /// token; empty for none.
    pub gateway_token: String,
    /// Install an update while the box is on air (otherwise it waits until the box stops).
    pub update_on_air: bool,
    /// Check the server's certificate against the system's CA store (off only for a test server).
    pub tls_verify: bool,
}

impl Default for FleetConfig {
    fn default() -> Self {
        Self {
            server: String::new(),
            tenant: "DEFAULT".into(),
            controller_id: String::new(),
            target_token: String::new(),
            gateway_token: String::new(),
            update_on_air: false,
            tls_verify: true,
        }
    }
}

impl fmt::Debug for FleetConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hide = |s: &str| if s.is_empty() { "" } else { crate::HIDDEN };
        f.debug_struct("FleetConfig")
            .field("server", &self.server)
            .field("tenant", &self.tenant)
            .field("controller_id", &self.controller_id)
            .field("target_token", &hide(&self.target_token))
            .field("gateway_token", &hide(&self.gateway_token))
            .field("update_on_air", &self.update_on_air)
            .field("tls_verify", &self.tls_verify)
            .finish()
    }
}

/// How the box proves itself to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetAuth {
    /// Not at all (a server that registers boxes openly).
    None,
    /// Its own target token.
    Target(Secret),
    /// The tenant's gateway token.
    Gateway(Secret),
}

impl FleetAuth {
    /// The `Authorization` header's value, if any. Never log it.
    pub fn header(&self) -> Option<String> {
        match self {
            FleetAuth::None => None,
            FleetAuth::Target(t) => Some(format!("TargetToken {}", t.expose())),
            FleetAuth::Gateway(t) => Some(format!("GatewayToken {}", t.expose())),
        }
    }
}

/// The checked `[fleet]`, when a server is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fleet {
    /// Over TLS.
    pub secure: bool,
    /// The server's host name or address.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// A path before the tenant (a server behind a proxy's prefix), without a trailing `/`.
    pub prefix: String,
    /// The tenant.
    pub tenant: String,
    /// This box's controller id.
    pub controller_id: String,
    /// How the box proves itself.
    pub auth: FleetAuth,
    /// Install while on air.
    pub update_on_air: bool,
    /// Check the server's certificate.
    pub tls_verify: bool,
}

impl Fleet {
    /// The path of this box's resource on the server: `{prefix}/{tenant}/controller/v1/{id}`.
    pub fn controller_path(&self) -> String {
        format!("{}/{}/controller/v1/{}", self.prefix, self.tenant, self.controller_id)
    }

    /// The server, for logs: `https://host:port`.
    pub fn label(&self) -> String {
        format!("{}://{}:{}{}", if self.secure { "https" } else { "http" }, self.host, self.port, self.prefix)
    }
}

/// Letters, digits and `-_.`, 1 to `max` of them: safe in a URL's path as it is.
fn is_path_word(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// A token as a server hands it out: visible ASCII without spaces, 1-256 characters.
fn is_token(s: &str) -> bool {
    (1..=256).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic())
}

/// `https://HOST[:PORT][/PATH]`: secure, host, port, prefix.
fn parse_server(s: &str) -> Result<(bool, String, u16, String), String> {
    let wrong =
        |why: &str| format!("{s:?} {why}; write https://HOST[:PORT][/PATH] (or http:// on a network of your own)");
    let (secure, rest) = match (s.strip_prefix("https://"), s.strip_prefix("http://")) {
        (Some(r), _) => (true, r),
        (_, Some(r)) => (false, r),
        _ => return Err(wrong("is not an http:// or https:// address")),
    };
    if rest.contains(['?', '#', '@']) || rest.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err(wrong("has a query, a user, spaces or characters outside visible ASCII"));
    }
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') && !p.contains(']') => {
            (h, p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| wrong("has a port outside 1-65535"))?)
        }
        _ => (authority, if secure { 443 } else { 80 }),
    };
    let bracketed = host.len() > 2 && host.starts_with('[') && host.ends_with(']');
    let host = if bracketed { &host[1..host.len() - 1] } else { host };
    let scheme = if secure { "https" } else { "http" };
    crate::check_host(scheme, host, bracketed).map_err(|e| wrong(&format!("names no usable host: {e}")))?;
    let prefix = path.trim_end_matches('/');
    if !prefix.split('/').skip(1).all(|w| is_path_word(w, 64)) {
        return Err(wrong("has a path of other than letters, digits and -_."));
    }
    Ok((secure, host.to_string(), port, prefix.to_string()))
}

impl FleetConfig {
    /// The settings (`None`: off), or each wrong field with its message; `name` is the box's,
    /// its controller id when none is given.
    pub fn check(&self, name: &str) -> Result<Option<Fleet>, Vec<(&'static str, String)>> {
        let mut errs = Vec::new();
        if !self.tenant.is_empty() && !is_path_word(&self.tenant, 64) {
            errs.push(("fleet.tenant", format!("{:?} must be 1-64 letters, digits and -_.", self.tenant)));
        }
        if !self.controller_id.is_empty() && !is_path_word(&self.controller_id, 64) {
            errs.push((
                "fleet.controller_id",
                format!("{:?} must be 1-64 letters, digits and -_.", self.controller_id),
            ));
        }
        for (field, token) in [("fleet.target_token", &self.target_token), ("fleet.gateway_token", &self.gateway_token)]
        {
            if !token.is_empty() && !is_token(token) {
                errs.push((
                    field,
                    format!(
                        "has {} characters; it must be 1-256 visible ASCII characters without spaces (or be empty)",
                        token.len()
                    ),
                ));
            }
        }
        if !self.target_token.is_empty() && !self.gateway_token.is_empty() {
            errs.push(("fleet.gateway_token", "is set with fleet.target_token: give one of the two".into()));
        }
        let server = if self.server.is_empty() {
            None
        } else {
            parse_server(&self.server).map_err(|m| errs.push(("fleet.server", m))).ok()
        };
        if self.server.is_empty() {
            return if errs.is_empty() { Ok(None) } else { Err(errs) };
        }
        if self.tenant.is_empty() {
            errs.push((
                "fleet.tenant",
                "is empty: the server's tenant is needed (hawkBit's default is DEFAULT)".into(),
            ));
        }
        match server {
            Some((secure, host, port, prefix)) if errs.is_empty() => {
                let auth = if !self.target_token.is_empty() {
                    FleetAuth::Target(Secret::new(&self.target_token))
                } else if !self.gateway_token.is_empty() {
                    FleetAuth::Gateway(Secret::new(&self.gateway_token))
                } else {
                    FleetAuth::None
                };
                let controller_id = if self.controller_id.is_empty() { name } else { &self.controller_id };
                Ok(Some(Fleet {
                    secure,
                    host,
                    port,
                    prefix,
                    tenant: self.tenant.clone(),
                    controller_id: controller_id.to_string(),
                    auth,
                    update_on_air: self.update_on_air,
                    tls_verify: self.tls_verify,
                }))
            }
            _ => Err(errs),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn with(server: &str) -> FleetConfig {
        FleetConfig { server: server.into(), ..FleetConfig::default() }
    }

    #[test]
    fn off_until_a_server_is_named() {
        assert_eq!(FleetConfig::default().check("box").unwrap(), None);
    }

    #[test]
    fn a_server_is_read_with_its_port_and_prefix_and_the_name_stands_for_the_id() {
        let f = with("https://updates.example.com:8443/hawkbit/").check("studio-a").unwrap().unwrap();
        assert_eq!(
            (f.secure, f.host.as_str(), f.port, f.prefix.as_str()),
            (true, "updates.example.com", 8443, "/hawkbit")
        );
        assert_eq!(f.controller_path(), "/hawkbit/DEFAULT/controller/v1/studio-a");
        assert_eq!(f.auth, FleetAuth::None);
        let f = with("http://[::1]").check("b").unwrap().unwrap();
        assert_eq!((f.secure, f.host.as_str(), f.port, f.prefix.as_str()), (false, "::1", 80, ""));
    }

    #[test]
    fn each_wrong_field_is_named_with_what_is_allowed() {
        for bad in [
            "ftp://x",
            "https://",
            "https://h:0",
            "https://h:99999",
            "https://u@h",
            "https://h/a b",
            "https://h/?x=1",
            "https://h/a%2f",
        ] {
            let errs = with(bad).check("b").unwrap_err();
            assert_eq!(errs[0].0, "fleet.server", "{bad}: {errs:?}");
            assert!(errs[0].1.contains("https://HOST"), "{bad}: {errs:?}");
        }
        let c = FleetConfig {
            tenant: "a/b".into(),
            controller_id: "x y".into(),
            target_token: "t".into(),
            gateway_token: "g g".into(),
            ..with("https://h")
        };
        let fields: Vec<_> = c.check("b").unwrap_err().into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["fleet.tenant", "fleet.controller_id", "fleet.gateway_token", "fleet.gateway_token"]);
    }

    #[test]
    fn a_token_is_sent_as_its_kind_and_never_printed() {
        let c = FleetConfig { target_token: "s3cret-token".into(), ..with("https://h") };
        let f = c.check("b").unwrap().unwrap();
        assert_eq!(f.auth.header().unwrap(), "TargetToken s3cret-token");
        assert!(!format!("{f:?} {c:?}").contains("s3cret"), "{f:?} {c:?}");
        let c = FleetConfig { gateway_token: "gw".into(), ..with("https://h") };
        assert_eq!(c.check("b").unwrap().unwrap().auth.header().unwrap(), "GatewayToken gw");
    }
}
