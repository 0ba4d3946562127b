//! The checker's self-tests: a correct run passes, and each guarantee, broken on purpose in an
//! otherwise correct run, is caught, and only it. These are what prove the checker can fail.

mod passing;
mod support;
mod violations;
