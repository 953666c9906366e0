//! The `blackhole` connector: a sink that discards every row.

use riffle_plan::ConnectorSpec;

use crate::options::Options;
use crate::{ChangeBatch, Result, SinkWriter};

/// Opens a blackhole sink (it takes no options besides `connector`).
pub fn open_sink(spec: &ConnectorSpec) -> Result<Box<dyn SinkWriter>> {
    Options::new(spec).finish()?;
    Ok(Box::new(Blackhole))
}

/// A sink that accepts and drops everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct Blackhole;

impl SinkWriter for Blackhole {
    fn write(&mut self, _batch: &ChangeBatch) -> Result<()> {
        crate::probe::sink_received();
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}
