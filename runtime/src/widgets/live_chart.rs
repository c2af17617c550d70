//! A chart that points are pushed to while a cell runs: a training loss watched as it falls.
//! It is a display (plotters' SVG through [`crate::line_chart`]) redrawn in place, at most every
//! [`REDRAW_EVERY`], so a loop that pushes a point per step spends its time on the step rather
//! than on drawing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::chart::line_chart;
use crate::error::{Error, Result};
use crate::notebook::{display, DisplayHandle, Displayable, Svg};

/// The least time between two redraws.
pub const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// A line chart that grows: `push(series, x, y)` adds a point; the display follows.
#[derive(Clone)]
pub struct LiveChart {
    inner: Arc<Mutex<Chart>>,
}

struct Chart {
    title: String,
    x_desc: String,
    y_desc: String,
    series: Vec<(String, Vec<(f64, f64)>)>,
    handle: Option<DisplayHandle>,
    drawn_at: Option<Instant>,
    /// Points pushed since the last redraw.
    pending: bool,
    /// Whether the display now shows a PNG beside the SVG (only a final redraw draws one).
    with_png: bool,
    redraws: u64,
}

/// A chart's SVG without its PNG, for the redraws while points arrive.
struct VectorOnly(Svg);

impl Displayable for VectorOnly {
    fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        self.0.vector_bundle()
    }
}

impl Chart {
    fn svg(&self) -> Result<Svg> {
        let series: Vec<(&str, &[(f64, f64)])> = self
            .series
            .iter()
            .map(|(name, points)| (name.as_str(), points.as_slice()))
            .collect();
        line_chart(&self.title, &self.x_desc, &self.y_desc, &series)
    }

    /// Redraws the display; `finished` (flush, drop) adds the PNG that a saved notebook shows
    /// where SVG is not drawn.
    fn redraw(&mut self, finished: bool) -> Result<()> {
        let svg = self.svg()?;
        let shown: Box<dyn Displayable> = if finished {
            Box::new(svg)
        } else {
            Box::new(VectorOnly(svg))
        };
        match &self.handle {
            Some(handle) => handle.update(shown.as_ref()),
            None => self.handle = Some(display(shown.as_ref())),
        }
        self.with_png = finished;
        self.drawn_at = Some(Instant::now());
        self.pending = false;
        self.redraws += 1;
        Ok(())
    }
}

impl Drop for Chart {
    fn drop(&mut self) {
        // The last points pushed inside the throttle window still reach the page.
        if self.pending || (self.handle.is_some() && !self.with_png) {
            let _ = self.redraw(true);
        }
    }
}

impl LiveChart {
    /// A chart titled `title` with axes described by `x_desc` and `y_desc`, shown at once
    /// (empty axes) where the cell's output is.
    pub fn new(title: &str, x_desc: &str, y_desc: &str) -> Result<LiveChart> {
        let mut chart = Chart {
            title: title.to_string(),
            x_desc: x_desc.to_string(),
            y_desc: y_desc.to_string(),
            series: Vec::new(),
            handle: None,
            drawn_at: None,
            pending: false,
            with_png: false,
            redraws: 0,
        };
        chart.redraw(false)?;
        Ok(LiveChart {
            inner: Arc::new(Mutex::new(chart)),
        })
    }

    fn chart(&self) -> std::sync::MutexGuard<'_, Chart> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds the point `(x, y)` to the series named `series` (a new series, in a colour of its
    /// own, on first use). The display is redrawn when [`REDRAW_EVERY`] has passed since the
    /// last redraw; otherwise at the next push, [`LiveChart::flush`] or the chart's drop.
    /// Points that are not finite are kept but not drawn (a diverging loss shows as a gap).
    pub fn push(&self, series: &str, x: f64, y: f64) -> Result<()> {
        let mut chart = self.chart();
        match chart.series.iter_mut().find(|(name, _)| name == series) {
            Some((_, points)) => points.push((x, y)),
            None => chart.series.push((series.to_string(), vec![(x, y)])),
        }
        chart.pending = true;
        let due = chart.drawn_at.is_none_or(|t| t.elapsed() >= REDRAW_EVERY);
        if due {
            chart.redraw(false)?;
        }
        Ok(())
    }

    /// Redraws now if points arrived since the last redraw, or if the display still lacks the
    /// PNG that a finished chart carries.
    pub fn flush(&self) -> Result<()> {
        let mut chart = self.chart();
        if chart.pending || !chart.with_png {
            chart.redraw(true)?;
        }
        Ok(())
    }

    /// The points of `series` so far; an unknown series is an error naming the known ones.
    pub fn points(&self, series: &str) -> Result<Vec<(f64, f64)>> {
        let chart = self.chart();
        chart
            .series
            .iter()
            .find(|(name, _)| name == series)
            .map(|(_, points)| points.clone())
            .ok_or_else(|| Error::InvalidArgument {
                op: "LiveChart::points",
                message: format!(
                    "no series {series:?}; the chart has {:?}",
                    chart.series.iter().map(|(n, _)| n).collect::<Vec<_>>()
                ),
            })
    }

    /// How many times the display was drawn (the first, empty one included).
    pub fn redraws(&self) -> u64 {
        self.chart().redraws
    }

    fn summary(&self) -> String {
        let chart = self.chart();
        let counts: Vec<String> = chart
            .series
            .iter()
            .map(|(name, points)| format!("{name}: {} points", points.len()))
            .collect();
        format!("LiveChart({:?}; {})", chart.title, counts.join(", "))
    }

    /// The notebook display: the chart as it stands (a copy that later pushes do not redraw).
    pub fn evcxr_display(&self) {
        crate::evcxr_display::emit_bundle(&self.mime_bundle());
    }
}

impl Displayable for LiveChart {
    fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        match self.chart().svg() {
            Ok(svg) => svg.mime_bundle(),
            Err(e) => vec![("text/plain", e.to_string())],
        }
    }
}

impl std::fmt::Debug for LiveChart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_are_kept_and_redraws_are_throttled() {
        let chart = LiveChart::new("loss", "step", "loss").unwrap();
        assert_eq!(chart.redraws(), 1);
        for i in 0..1000 {
            chart
                .push("train", i as f64, 1.0 / (1.0 + i as f64))
                .unwrap();
        }
        chart.push("valid", 0.0, f64::NAN).unwrap();
        assert_eq!(chart.points("train").unwrap().len(), 1000);
        assert_eq!(chart.points("valid").unwrap().len(), 1);
        assert!(chart
            .points("test")
            .unwrap_err()
            .to_string()
            .contains("train"));
        // 1000 pushes in far less than a second: a handful of redraws, not a thousand.
        assert!(chart.redraws() < 50, "{} redraws", chart.redraws());
        chart.flush().unwrap();
        let after = chart.redraws();
        chart.flush().unwrap();
        assert_eq!(chart.redraws(), after, "nothing new, nothing drawn");
        assert!(format!("{chart:?}").contains("train: 1000 points"));
    }
}
