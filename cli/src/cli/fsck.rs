//! `strata --store DIR fsck [--verify] [--json]`: the same report and exit code as
//! `engine-fsck DIR`, from the same library calls (`strata::recover::fsck`).

use std::path::Path;
use std::process::ExitCode;

use strata::recover::fsck::{FsckReport, check, render};
use strata::segment::vfs::RealFs;

use super::args::FsckArgs;
use super::{Failure, print};

pub fn run(dir: &Path, args: &FsckArgs) -> Result<ExitCode, Failure> {
    let mut report = match RealFs::open(dir) {
        Ok(vfs) => check(&vfs, args.verify),
        Err(error) => FsckReport::unusable(format!(
            "cannot open {} as a store folder: {error}",
            dir.display()
        )),
    };
    report.store = Some(dir.display().to_string());
    let text = if args.json {
        let mut json = serde_json::to_string_pretty(&report)
            .map_err(|e| Failure::new(format!("cannot render the report as JSON: {e}")))?;
        json.push('\n');
        json
    } else {
        render(&report)
    };
    print(&text)?;
    Ok(ExitCode::from(report.exit_code()))
}
