//! The run as a picture (`--timeline FILE.svg`): time across; for each client, the
//! resourceVersion it had reached (every event and bookmark it was delivered, a step line),
//! its LISTs (circles) and the ends of its watch streams (crosses); storage's own revision as
//! a grey line behind them; each fault a vertical line with its name; each finding of the client
//! audit a triangle along the bottom, named "client: rule", where it happened. A client that
//! falls behind, stalls or relists is visible at a glance where a table needs reading.

use std::path::Path;

use anyhow::Context;
use listwatch_simulator::record::{ClientRecord, Delivery, ListResult};
use plotters::prelude::*;

use listwatch_testkit::plot::{PALETTE, draw_error};

/// What the picture shows.
pub struct TimelineData<'a> {
    /// The scenario's name (the title).
    pub title: &'a str,
    /// The run's length in milliseconds.
    pub elapsed_ms: u64,
    /// Each fault: when (ms) and what.
    pub faults: &'a [(u64, String)],
    /// Storage's revision over time (ms, revision), as the history reader saw it.
    pub storage: &'a [(u64, i64)],
    /// What every client saw.
    pub clients: &'a [ClientRecord],
    /// The client audit's findings: when (ms) and "client: rule".
    pub findings: &'a [(u64, String)],
}

/// Draws the timeline into an SVG file at `path`.
pub fn write(path: &Path, data: &TimelineData) -> anyhow::Result<()> {
    let height = 420 + 18 * u32::try_from(data.clients.len()).unwrap_or(u32::MAX).min(40);
    let root = SVGBackend::new(path, (1100, height)).into_drawing_area();
    root.fill(&WHITE).map_err(draw_error("the timeline"))?;
    let max_rv = data
        .storage
        .iter()
        .map(|(_, rv)| *rv)
        .chain(data.clients.iter().flat_map(|c| c.watches.iter()).flat_map(|w| w.deliveries.iter()).filter_map(rv_of))
        .max()
        .unwrap_or(1)
        .max(1);
    let end = data.elapsed_ms.max(1) as f64 / 1000.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: resourceVersion each client reached", data.title), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(32)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..end, 0i64..max_rv + max_rv / 20 + 1)
        .map_err(draw_error("the timeline"))?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("resourceVersion")
        .light_line_style(WHITE)
        .draw()
        .map_err(draw_error("the timeline"))?;

    // Faults first, behind everything.
    for (i, (at, what)) in data.faults.iter().enumerate() {
        let x = *at as f64 / 1000.0;
        // Labels of faults close together go on three rows, so they do not print over each other.
        let row = i64::try_from(i % 3).unwrap_or(0);
        chart
            .draw_series(LineSeries::new([(x, 0), (x, max_rv)], RGBColor(200, 60, 60).mix(0.5).stroke_width(1)))
            .map_err(draw_error("the timeline"))?;
        chart
            .draw_series(std::iter::once(Text::new(
                what.clone(),
                (x, max_rv + max_rv / 40 - row * (max_rv / 25)),
                ("sans-serif", 11).into_font().color(&RGBColor(160, 40, 40)),
            )))
            .map_err(draw_error("the timeline"))?;
    }
    if !data.storage.is_empty() {
        chart
            .draw_series(LineSeries::new(
                data.storage.iter().map(|(t, rv)| (*t as f64 / 1000.0, *rv)),
                RGBColor(170, 170, 170).stroke_width(3),
            ))
            .map_err(draw_error("the timeline"))?
            .label("storage")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RGBColor(170, 170, 170).stroke_width(3)));
    }
    for (i, client) in data.clients.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let mut reached: Vec<(f64, i64)> = Vec::new();
        let mut points: Vec<(u64, i64)> = client
            .watches
            .iter()
            .flat_map(|w| w.deliveries.iter())
            .filter_map(|d| rv_of(d).map(|rv| (d.at_ms(), rv)))
            .chain(client.lists.iter().filter_map(|l| match &l.result {
                ListResult::Ok { resource_version, .. } => Some((l.at_ms, *resource_version)),
                ListResult::Failed { .. } => None,
            }))
            .collect();
        points.sort_by_key(|(t, _)| *t);
        for (t, rv) in points {
            let x = t as f64 / 1000.0;
            if let Some((_, last)) = reached.last().copied() {
                reached.push((x, last));
            }
            reached.push((x, rv));
        }
        chart
            .draw_series(LineSeries::new(reached, colour.stroke_width(1)))
            .map_err(draw_error("the timeline"))?
            .label(client.id.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2)));
        chart
            .draw_series(client.lists.iter().filter_map(|l| match &l.result {
                ListResult::Ok { resource_version, .. } => {
                    Some(Circle::new((l.at_ms as f64 / 1000.0, *resource_version), 4, colour.stroke_width(2)))
                }
                ListResult::Failed { .. } => None,
            }))
            .map_err(draw_error("the timeline"))?;
        chart
            .draw_series(client.watches.iter().filter_map(|w| {
                let ended = w.ended_ms?;
                // Where the stream stood when it ended: its last delivery, else where it began.
                let rv =
                    w.deliveries.iter().rev().find_map(rv_of).or_else(|| w.request.resource_version.parse().ok())?;
                Some(Cross::new((ended as f64 / 1000.0, rv), 4, colour.stroke_width(1)))
            }))
            .map_err(draw_error("the timeline"))?;
    }
    // The audit's findings along the bottom, labels staggered over four rows.
    let finding_colour = RGBColor(150, 30, 150);
    for (i, (at, what)) in data.findings.iter().enumerate() {
        let x = *at as f64 / 1000.0;
        let y = max_rv / 40 + i64::try_from(i % 4).unwrap_or(0) * (max_rv / 30);
        chart
            .draw_series(std::iter::once(TriangleMarker::new((x, y), 5, finding_colour.filled())))
            .map_err(draw_error("the timeline"))?;
        chart
            .draw_series(std::iter::once(Text::new(
                what.clone(),
                (x, y + max_rv / 80),
                ("sans-serif", 10).into_font().color(&finding_colour),
            )))
            .map_err(draw_error("the timeline"))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(draw_error("the timeline"))?;
    root.present().map_err(draw_error("the timeline")).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn rv_of(delivery: &Delivery) -> Option<i64> {
    match delivery {
        Delivery::Event { resource_version, .. } | Delivery::Bookmark { resource_version, .. } => {
            Some(*resource_version)
        }
        Delivery::Error { .. } => None,
    }
}
