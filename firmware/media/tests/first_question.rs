//! Asking whether an element exists before anything else in the process has touched GStreamer
//! (a box whose monitor is connected at boot asks it to choose `kmssink` for its setup screen):
//! this file holds one test so that it runs in a process of its own.
#![allow(clippy::unwrap_used)]

#[test]
fn has_element_answers_before_anything_initialised_gstreamer() {
    assert!(telebridge_media::has_element("fakesink"));
    assert!(!telebridge_media::has_element("no-such-element-anywhere"));
}
