//! What every picture the tools draw shares (the simulator's timelines, the benches' sweep
//! plots): one palette, one way to report a drawing failure.

use plotters::style::RGBColor;

/// One colour per line, cycling (matplotlib's "tab10", minus grey and olive).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// A plotters error as an `anyhow::Error` naming what was being drawn.
pub fn draw_error<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> anyhow::Error {
    move |e| anyhow::anyhow!("drawing {what}: {e}")
}
