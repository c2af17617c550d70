//! Line charts for notebooks (a training loss, a curve to watch): plotters' SVG, shown with
//! `display` and redrawn in place with a `DisplayHandle` while a loop runs.

use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::notebook::Svg;

/// One named line of `(x, y)` points.
pub type Series<'a> = (&'a str, &'a [(f64, f64)]);

/// A line chart of `series` (each in its own colour, with a legend), axes described by
/// `x_desc` and `y_desc`. Points that are not finite are left out; no points at all draws
/// empty axes.
pub fn line_chart(title: &str, x_desc: &str, y_desc: &str, series: &[Series<'_>]) -> Result<Svg> {
    let chart_error = |e: &dyn std::fmt::Display| Error::InvalidArgument {
        op: "line_chart",
        message: format!("plotting failed: {e}"),
    };
    let finite: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|(_, points)| {
            points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect()
        })
        .collect();
    let all = finite.iter().flatten();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in all {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if x1 - x0 < 1e-12 {
        x1 = x0 + 1.0;
    }
    let pad = ((y1 - y0) * 0.05).max(1e-9);
    let (y0, y1) = (y0 - pad, y1 + pad);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| chart_error(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| chart_error(&e))?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(|e| chart_error(&e))?;
        for (i, ((name, _), points)) in series.iter().zip(&finite).enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| chart_error(&e))?
                .label(*name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| chart_error(&e))?;
        root.present().map_err(|e| chart_error(&e))?;
    }
    Ok(Svg(svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_each_series_and_survives_nothing_to_draw() {
        let loss = [(0.0, 2.3), (1.0, 1.1), (2.0, f64::NAN), (3.0, 0.4)];
        let svg = line_chart("loss", "step", "loss", &[("train", &loss)]).unwrap();
        assert!(svg.0.contains("<svg") && svg.0.contains("train"));
        let empty = line_chart("nothing", "x", "y", &[("none", &[])]).unwrap();
        assert!(empty.0.contains("<svg"));
    }
}
