//! Experiments that fail on purpose (`--inject-failure`): the smoke test checks that the report
//! marks them failed with their error instead of hiding them.

use crate::experiments::Ctx;
use crate::model::Section;

pub fn panics(_: &Ctx) -> Result<Section, String> {
    panic!("injected failure: this experiment panics on purpose");
}

pub fn hangs(_: &Ctx) -> Result<Section, String> {
    // Parks forever; the runner's time limit must report it and move on.
    loop {
        std::thread::park();
    }
}
