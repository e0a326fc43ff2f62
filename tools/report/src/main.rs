//! The footprint report (see the library's docs: `cargo doc -p footprint-report --open`).

fn main() -> std::process::ExitCode {
    footprint_report::app::main()
}
