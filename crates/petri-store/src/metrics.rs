//! The v0.11 metrics, aggregated in SQL.

use std::collections::BTreeMap;

use crate::{AgentMetrics, Metrics, Store, StoreError};

/// A finished run counts as failed unless it succeeded (exit 0); running runs are not counted.
const FINISHED: &str = "r.status != 'running'";
const FAILED: &str = "r.status != 'succeeded'";

fn rate(total: u64, failed: u64) -> f64 {
    let raw = 1.0 - failed as f64 / total as f64;
    (raw * 100.0).round() / 100.0
}

impl Store {
    /// Computes the metrics object of `GET /v1/metrics`.
    pub fn metrics(&self) -> Result<Metrics, StoreError> {
        let conn = self.conn();
        let (sandboxes_active, sandboxes_total): (u64, u64) = conn.query_row(
            "SELECT COALESCE(SUM(deleted_at IS NULL), 0), COUNT(*) FROM sandboxes",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        let (runs_total, runs_failed, avg_duration): (u64, u64, Option<f64>) = conn.query_row(
            &format!(
                "SELECT COUNT(*), COALESCE(SUM({FAILED}), 0), AVG(r.duration_ms) \
                 FROM runs r WHERE {FINISHED}"
            ),
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )?;
        let mut stmt = conn.prepare(&format!(
            "SELECT s.agent, COUNT(*), COALESCE(SUM({FAILED}), 0) FROM runs r \
             JOIN sandboxes s ON s.id = r.sandbox_id \
             WHERE s.agent IS NOT NULL AND {FINISHED} GROUP BY s.agent"
        ))?;
        let by_agent = stmt
            .query_map([], |row| {
                let agent: String = row.get(0)?;
                let runs: u64 = row.get(1)?;
                let failed: u64 = row.get(2)?;
                Ok((
                    agent,
                    AgentMetrics {
                        runs,
                        success_rate: rate(runs, failed),
                    },
                ))
            })?
            .collect::<Result<BTreeMap<_, _>, _>>()?;
        Ok(Metrics {
            sandboxes_active,
            sandboxes_total,
            runs_total,
            runs_failed,
            success_rate: (runs_total > 0).then(|| rate(runs_total, runs_failed)),
            // Truncation, as the original's int(AVG(...)) did.
            avg_duration_ms: avg_duration.map_or(0, |avg| avg as u64),
            by_agent,
        })
    }
}
