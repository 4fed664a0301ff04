/* Open MPI 5.0.7's developer headers include this header from ompi/op/op.h but do not install it
 * (it lives in the Fortran bindings' source). ompi_op_reduce, which osc_ucxdt_accumulate.c
 * calls, uses one macro of it, for user ops written in Fortran: the conversion of a C int to
 * MPI_Fint, which a cast does at every Fortran integer size. */
#ifndef OSC_UCXDT_FINT_2_INT_H
#define OSC_UCXDT_FINT_2_INT_H

#define OMPI_INT_2_FINT(a) ((MPI_Fint)(a))
#define OMPI_FINT_2_INT(a) ((int)(a))

#endif
