//! Integration tests: each starts the real server binary (root is needed for cgroup limits;
//! CI runs as root) and drives it over HTTP.

mod helpers;

mod cli;
mod deps;
mod deps_java;
mod doctor;
mod exec;
mod hostile;
mod identities;
mod isolation;
mod landlock;
mod languages;
mod lifecycle;
mod limits;
mod mcp;
mod ports;
mod processes;
mod quotas;
mod routes;
mod testmode;
