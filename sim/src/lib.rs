//! stub
#![forbid(unsafe_code)]
