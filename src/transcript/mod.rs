//! What a transcript is: records with their lazily parsed headers, the session graph built
//! from them, and the turns a person sees.

pub mod budget;
pub mod context;
pub mod damage;
pub mod ids;
pub mod record;
pub mod session;
pub mod turns;
