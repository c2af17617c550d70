//! `tensorbook clients`: what the runtime can use on this machine, and why not where it can't.

use tensorbook::notebook::clients_table;
use tensorbook::{clients, default_device};

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
        let out = serde_json::json!({ "clients": list, "default": default_device().to_string() });
        println!("{out:#}");
    } else {
        println!("{}", clients_table());
    }
    Ok(())
}
