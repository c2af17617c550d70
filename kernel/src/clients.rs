//! `tensorbook clients`: what the runtime can use on this machine, and why not where it can't.

use tensorbook::notebook::clients_table;
use tensorbook::{clients, cuda_report, default_device, nccl_status};

/// Prints every client as a table (or JSON) followed by the session default.
pub fn print(json: bool) -> tensorbook::Result<()> {
    let infos = clients();
    if json {
        let list: Vec<serde_json::Value> = infos
            .iter()
            .map(|i| {
                serde_json::json!({
                    "client": i.client.name(),
                    "available": i.available,
                    "device_count": i.device_count,
                    "default_device_id": i.default_device_id,
                    "reason": i.reason,
                })
            })
            .collect();
        let nccl = match nccl_status() {
            Ok(found) => serde_json::json!({ "available": true, "library": found }),
            Err(why) => serde_json::json!({ "available": false, "reason": why }),
        };
        let report = cuda_report();
        let component = |c: &tensorbook::CudaComponent| {
            serde_json::json!({
                "path": c.path.as_ref().map(|p| p.display().to_string()),
                "version": c.version,
                "note": c.note,
                "others": c.others.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            })
        };
        let gpus: Vec<serde_json::Value> = report
            .gpus
            .iter()
            .map(|g| {
                serde_json::json!({
                    "device": format!("cuda:{}", g.ordinal),
                    "name": g.name,
                    "memory_bytes": g.memory_bytes,
                    "compute_capability": format!("{}.{}", g.compute_capability.0, g.compute_capability.1),
                })
            })
            .collect();
        let out = serde_json::json!({
            "clients": list,
            "cuda": {
                "driver": component(&report.driver),
                "cublas": component(&report.blas),
                "nvrtc": component(&report.nvrtc),
                "gpus": gpus,
            },
            "nccl": nccl,
            "default": default_device().to_string(),
        });
        println!("{out:#}");
    } else {
        println!("{}", clients_table());
    }
    Ok(())
}
