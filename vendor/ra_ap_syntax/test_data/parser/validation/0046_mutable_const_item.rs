const mut FOO: () = ();
