//! The `sinew` binary, driven end to end: real processes, real HTTP against the scripted
//! servers of `sinew-testing`, a real SQLite file, and a pseudo-terminal for the REPL.

mod cloud;
mod mcp;
mod one_shot;
mod repl;
mod serve;
mod support;
