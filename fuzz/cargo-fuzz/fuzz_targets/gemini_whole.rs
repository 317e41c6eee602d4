#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| hermes_fuzz::gemini_whole(data));
