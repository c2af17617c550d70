//! `tensorbook clients`: what the runtime can use on this machine, and why not where it can't.

use tensorbook::notebook::clients_table;
use tensorbook::{clients, default_device, nccl_status};

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
        let out = serde_json::json!({
            "clients": list,
            "nccl": nccl,
            "default": default_device().to_string(),
        });
        println!("{out:#}");
    } else {
        println!("{}", clients_table());
    }
    Ok(())
}
