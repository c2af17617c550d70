//! `tensorbook clients`: what the runtime can use on this machine, and why not where it can't.

use tensorbook::{clients, default_device, ClientInfo};

fn row(info: &ClientInfo) -> String {
    let devices = if info.available {
        (0..info.device_count)
            .map(|id| {
                tensorbook::Device {
                    client: info.client,
                    id,
                }
                .to_string()
            })
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        "-".into()
    };
    format!(
        "{:<8} {:<10} {:<24} {}",
        info.client.name(),
        if info.available {
            "available"
        } else {
            "absent"
        },
        devices,
        info.reason.as_deref().unwrap_or("")
    )
}

/// Every client as a table, followed by the session default (also `:clients` in a notebook).
pub fn table() -> String {
    let mut out = format!(
        "{:<8} {:<10} {:<24} why not\n",
        "client", "state", "devices"
    );
    for info in &clients() {
        out.push_str(&row(info));
        out.push('\n');
    }
    out.push_str(&format!("session default: {}", default_device()));
    out
}

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
        println!("{}", table());
    }
    Ok(())
}
