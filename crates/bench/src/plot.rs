//! The pictures of a sweep: delivered events/s and p99 write-to-delivery latency against the
//! swept number of watchers (or, when watchers are fixed, the object size), both axes on a
//! log scale, one line per row of the comparison and per swept transport, encoding or size.
//!
//! Drawn with plotters into SVG files named `<stem>-events.svg` and `<stem>-latency.svg`.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

use super::row::Row;
use listwatch_testkit::plot::{PALETTE, draw_error};

/// Which parameter runs across.
#[derive(Clone, Copy)]
enum Across {
    Watchers,
    ObjectSize,
}

impl Across {
    fn of(self, row: &Row) -> f64 {
        match self {
            Across::Watchers => row.watchers as f64,
            Across::ObjectSize => row.object_size as f64,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Across::Watchers => "watchers",
            Across::ObjectSize => "object size (bytes)",
        }
    }
}

/// Writes both plots of a sweep's rows into `dir`.
pub fn sweep_plots(dir: &Path, stem: &str, rows: &[Row]) -> anyhow::Result<()> {
    let distinct = |f: fn(&Row) -> String| rows.iter().map(f).collect::<std::collections::BTreeSet<_>>().len() > 1;
    let across = if distinct(|r| r.watchers.to_string()) { Across::Watchers } else { Across::ObjectSize };
    let (by_transport, by_encoding) =
        (distinct(|r| format!("{:?}", r.transport)), distinct(|r| format!("{:?}", r.encoding)));
    let by_size = matches!(across, Across::Watchers) && distinct(|r| r.object_size.to_string());
    // One line per row name and per swept value other than the one across.
    let mut lines: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for row in rows {
        let mut label = row.name.clone();
        if by_transport {
            label += &format!(" {:?}", row.transport).to_lowercase();
        }
        if by_encoding {
            label += &format!(" {:?}", row.encoding).to_lowercase();
        }
        if by_size {
            label += &format!(" {} B", row.object_size);
        }
        lines.entry(label).or_default().push(row);
    }
    for rows in lines.values_mut() {
        rows.sort_by(|a, b| across.of(a).total_cmp(&across.of(b)));
    }
    let events = dir.join(format!("{stem}-events.svg"));
    draw(&events, "delivered events/s", across, &lines, |r| r.events_per_sec)?;
    let latency = dir.join(format!("{stem}-latency.svg"));
    draw(&latency, "p99 write-to-delivery latency (ms)", across, &lines, |r| r.latency_p99_ms)?;
    eprintln!("bench: wrote {} and {}", events.display(), latency.display());
    Ok(())
}

fn draw(
    path: &Path,
    what: &str,
    across: Across,
    lines: &BTreeMap<String, Vec<&Row>>,
    value: fn(&Row) -> f64,
) -> anyhow::Result<()> {
    let points = || lines.values().flatten();
    let (x_min, x_max) =
        points().map(|r| across.of(r)).fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (y_min, y_max) = points()
        .map(|r| value(r))
        .filter(|y| *y > 0.0)
        .fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    if x_min > x_max || y_min > y_max {
        anyhow::bail!("nothing to plot in {}", path.display());
    }
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(draw_error("a sweep plot"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{what} against {}", across.label()), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d((x_min * 0.8..x_max * 1.25).log_scale(), (y_min * 0.5..y_max * 2.0).log_scale())
        .map_err(draw_error("a sweep plot"))?;
    chart
        .configure_mesh()
        .x_desc(across.label())
        .y_desc(what)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| if *y >= 1000.0 { format!("{:.0}k", y / 1000.0) } else { format!("{y:.1}") })
        .draw()
        .map_err(draw_error("a sweep plot"))?;
    for (i, (label, rows)) in lines.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let series: Vec<(f64, f64)> = rows.iter().map(|r| (across.of(r), value(r))).filter(|(_, y)| *y > 0.0).collect();
        chart
            .draw_series(LineSeries::new(series.clone(), colour.stroke_width(2)))
            .map_err(draw_error("a sweep plot"))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2)));
        chart
            .draw_series(series.into_iter().map(|p| Circle::new(p, 3, colour.filled())))
            .map_err(draw_error("a sweep plot"))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(draw_error("a sweep plot"))?;
    root.present().map_err(draw_error("a sweep plot"))?;
    Ok(())
}
