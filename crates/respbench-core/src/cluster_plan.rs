//! A Redis Cluster as a run uses it: the primaries, which slots each owns,
//! their replicas and where `--read-from` sends reads. Part of the [`Plan`]
//! (`Plan::cluster`); the CLI discovers it before the run.
//!
//! [`Plan`]: crate::plan::Plan

/// A Redis Cluster's topology as the run uses it, as the TS `ClusterPlan`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterPlan {
    /// The primaries `(host, port)`, in discovery (slot) order.
    pub nodes: Vec<(String, u16)>,
    /// Slot ranges `(first, last, node)`, both ends included; every slot covered.
    pub slots: Vec<(u16, u16, u32)>,
    /// `--read-from`: where the get side of the stream goes (writes always to the primary).
    pub read_from: ReadFrom,
    /// Each primary's replicas `(host, port)`, by index into `nodes` (empty: none known).
    pub replicas: Vec<Vec<(String, u16)>>,
}

/// `--read-from`: the primary (default), a replica of it, or either (spread per connection).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadFrom {
    #[default]
    Primary,
    Replica,
    Any,
}

impl ClusterPlan {
    /// `--read-from`: where connection `connection` sends its reads of
    /// primary `node`: None = the primary itself (its one socket sends
    /// everything), else the index of the replica in `replicas[node]`
    /// (a second socket, opened with READONLY). `Replica`: replica
    /// `connection mod R`; `Any`: member `connection mod (1 + R)` of
    /// primary-then-replicas. The same rule as the TS `readTarget`.
    pub fn read_target(&self, connection: u32, node: usize) -> Option<usize> {
        let replicas = self.replicas.get(node).map_or(0, |r| r.len());
        if replicas == 0 {
            return None;
        }
        match self.read_from {
            ReadFrom::Primary => None,
            ReadFrom::Replica => Some(connection as usize % replicas),
            ReadFrom::Any => (connection as usize % (1 + replicas)).checked_sub(1),
        }
    }

    /// Slot → node index (16384 entries).
    pub fn slot_owners(&self) -> Vec<u16> {
        let mut owner = vec![0u16; crate::slot::SLOTS as usize];
        for &(first, last, node) in &self.slots {
            for s in first..=last.min(crate::slot::SLOTS - 1) {
                owner[s as usize] = node as u16;
            }
        }
        owner
    }

    /// `host:port` of node `i`, as messages and per-node figures name it.
    pub fn node_label(&self, i: usize) -> String {
        let (host, port) = &self.nodes[i];
        endpoint_label(host, *port)
    }
}

/// `host:port`, an IPv6 host in brackets, as messages name a node.
pub fn endpoint_label(host: &str, port: u16) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same table as packages/cli/test/read-from.test.ts.
    #[test]
    fn read_target_spreads_reads_per_connection() {
        let n = |port: u16| ("127.0.0.1".to_string(), port);
        let base = ClusterPlan {
            nodes: vec![n(7000), n(7001)],
            slots: vec![(0, 16383, 0)],
            read_from: ReadFrom::Primary,
            replicas: vec![vec![n(7002), n(7003)], vec![]],
        };
        let table = |read_from: ReadFrom| -> Vec<[Option<usize>; 2]> {
            let c = ClusterPlan { read_from, ..base.clone() };
            (0..4).map(|id| [c.read_target(id, 0), c.read_target(id, 1)]).collect()
        };
        assert_eq!(table(ReadFrom::Primary), vec![[None, None]; 4]);
        assert_eq!(table(ReadFrom::Replica), vec![[Some(0), None], [Some(1), None], [Some(0), None], [Some(1), None]]);
        assert_eq!(table(ReadFrom::Any), vec![[None, None], [Some(0), None], [Some(1), None], [None, None]]);
    }
}
