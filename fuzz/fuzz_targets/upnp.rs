//! What any host on the LAN can send the UPnP client: SSDP answers, a router's description, SOAP
//! answers, and the kernel's routing table text. Never a panic; a control URL that comes out is
//! on the described host and has nothing that could split a request.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telebridge_pairing::upnp;

const LOCATION: &str = "http://10.0.1.1:5000/rootDesc.xml";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = upnp::location(&text);
    let _ = upnp::soap_value(&text, "NewExternalIPAddress");
    let _ = upnp::soap_value(&text, "errorDescription");
    let _ = upnp::default_gateway(&text);
    if let Some((service, url)) = upnp::control_url(&text, LOCATION) {
        assert!(url.starts_with("http://10.0.1.1:") || url.starts_with("http://10.0.1.1/"), "{url}");
        assert!(url.bytes().all(|b| b.is_ascii_graphic()), "{url:?}");
        assert!(service.bytes().all(|b| b.is_ascii_graphic() && b != b'"'), "{service:?}");
    }
});
