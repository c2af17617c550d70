"""The standard kernel conformance suite (jupyter_kernel_test) with every attribute that fits
Rust cells. Attributes left out are listed in ISSUES below with the reason."""
import unittest

import jupyter_kernel_test as jkt

from conftest import FIRST_CELL_TIMEOUT, run_cell

# Not set: code_page_something (pagers have no Rust meaning).


class TensorbookKernelTests(jkt.KernelTests):
    kernel_name = "tensorbook"
    language_name = "rust"
    file_extension = ".rs"

    code_hello_world = 'println!("hello, world");'
    code_stderr = 'eprintln!("to stderr");'
    completion_samples = [{"text": "std::collections::BTreeSe", "matches": {"BTreeSet"}}]
    complete_code_samples = ["let x = 1;", "fn f() -> i32 { 1 }", "x + 1", ":dep rand = \"0.9\""]
    incomplete_code_samples = ["fn f() {", "let v = vec![1,", "let s = \"open"]
    invalid_code_samples = ["let x = );", "fn f() { ]"]
    code_execute_result = [{"code": "6 * 7", "result": "42"}, {"code": "\"text\"", "result": "\"text\""}]
    code_history_pattern = "6 *"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "String"
    code_generate_error = 'let broken: i32 = "not a number";'
    code_display_data = [
        {"code": 'display(&Html("<b>bold</b>".into()));', "mime": "text/html"},
        {"code": "display(&Tensor::iota(DType::S32, &[3], None)?);", "mime": "text/plain"},
    ]
    code_clear_output = "clear_output(false);"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The first cell waits for evcxr and the runtime build; the suite's own timeout is 15 s.
        reply, _ = run_cell(cls.kc, "let warm_up = 0;", timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]


if __name__ == "__main__":
    unittest.main()
