//! Devices and clients read from text: `binary`, `host`, `host:1`, `cuda:0`, `gpu` (a bare
//! client name means device 0), with an error naming what was not understood.

use std::str::FromStr;

use super::{Client, Device};
use crate::error::{Error, Result};

impl Device {
    /// Parses `binary`, `host`, `host:1`, `cuda:0` (a bare client name means device 0).
    pub fn parse(s: &str) -> Result<Device> {
        s.parse()
    }
}

impl FromStr for Client {
    type Err = Error;
    fn from_str(s: &str) -> Result<Client> {
        match s.trim() {
            "binary" => Ok(Client::Binary),
            "host" | "cpu" => Ok(Client::Host),
            "cuda" | "gpu" => Ok(Client::Cuda),
            "sim" => Ok(Client::Sim),
            other => Err(Error::InvalidArgument {
                op: "client",
                message: format!("unknown client {other:?}: expected binary, host, cuda or sim"),
            }),
        }
    }
}

impl FromStr for Device {
    type Err = Error;
    fn from_str(s: &str) -> Result<Device> {
        let (name, id) = match s.trim().split_once(':') {
            Some((n, i)) => {
                let id = i
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| Error::InvalidArgument {
                        op: "device",
                        message: format!("{s:?} has no valid device number after ':'"),
                    })?;
                (n, id)
            }
            None => (s, 0),
        };
        let client: Client = name.parse()?;
        if client == Client::Binary && id != 0 {
            return Err(Error::InvalidArgument {
                op: "device",
                message: "the binary backend has only one device: write `binary`".into(),
            });
        }
        Ok(Device { client, id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_print_and_parse() {
        assert_eq!(Device::host(0).to_string(), "host:0");
        assert_eq!(Device::cuda(1).to_string(), "cuda:1");
        assert_eq!(Device::BINARY.to_string(), "binary");
        assert_eq!(Device::parse("host:1").unwrap(), Device::host(1));
        assert_eq!(Device::parse("cuda").unwrap(), Device::cuda(0));
        assert_eq!(Device::parse("sim:1").unwrap(), Device::sim(1));
        assert_eq!(Device::sim(1).to_string(), "sim:1");
        assert!(Device::parse("tpu:0").is_err());
        assert!(Device::parse("host:x").is_err());
    }
}
