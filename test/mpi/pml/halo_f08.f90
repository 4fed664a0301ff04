! A Fortran program (use mpi_f08) that exchanges the halo of a 2-D block with MPI subarray
! types: each rank owns an (n+2) x (n+2) array, its interior filled with values that name the
! rank and position, and sends its first and last interior columns to its ring neighbours,
! which receive them into their halo columns. Under `--mca pml ucxdt` the subarray types move
! through ucxdt (Open MPI's Fortran bindings call the same point-to-point layer as C's).
! Exit status 0 when every halo cell holds the neighbour's value and no other cell changed.
program halo_f08
    use mpi_f08
    implicit none
    integer, parameter :: n = 64
    double precision :: a(0:n+1, 0:n+1)
    type(MPI_Datatype) :: first_col, last_col, left_halo, right_halo
    type(MPI_Request) :: req(4)
    integer :: rank, size, left, right, i, j, bad, allbad
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    left = modulo(rank - 1, size)
    right = modulo(rank + 1, size)
    a = -1d0
    do j = 1, n
        do i = 1, n
            a(i, j) = value(rank, i, j)
        end do
    end do
    ! Columns 1 and n of the interior, and halo columns 0 and n+1 (rows 1..n), as subarrays.
    call column(1, first_col)
    call column(n, last_col)
    call column(0, left_halo)
    call column(n + 1, right_halo)
    call MPI_Irecv(a, 1, left_halo, left, 1, MPI_COMM_WORLD, req(1))
    call MPI_Irecv(a, 1, right_halo, right, 2, MPI_COMM_WORLD, req(2))
    call MPI_Isend(a, 1, last_col, right, 1, MPI_COMM_WORLD, req(3))
    call MPI_Isend(a, 1, first_col, left, 2, MPI_COMM_WORLD, req(4))
    call MPI_Waitall(4, req, MPI_STATUSES_IGNORE)
    bad = 0
    do j = 0, n + 1
        do i = 0, n + 1
            if (a(i, j) /= expected(i, j)) bad = bad + 1
        end do
    end do
    call MPI_Allreduce(bad, allbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (rank == 0) then
        if (allbad == 0) then
            print '(a, i0, a)', 'halo_f08: ', size, ' ranks, every halo cell right'
        else
            print '(a, i0, a)', 'halo_f08: FAIL, ', allbad, ' cells wrong'
        end if
    end if
    call MPI_Type_free(first_col)
    call MPI_Type_free(last_col)
    call MPI_Type_free(left_halo)
    call MPI_Type_free(right_halo)
    call MPI_Finalize()
    if (allbad /= 0) error stop 1
contains
    double precision function value(r, i, j)
        integer, intent(in) :: r, i, j
        value = r * 1d6 + j * 1d3 + i
    end function
    ! What cell (i, j) holds after the exchange.
    double precision function expected(i, j)
        integer, intent(in) :: i, j
        if (i >= 1 .and. i <= n .and. j >= 1 .and. j <= n) then
            expected = value(rank, i, j)
        else if (i >= 1 .and. i <= n .and. j == 0) then
            expected = value(left, i, n)
        else if (i >= 1 .and. i <= n .and. j == n + 1) then
            expected = value(right, i, 1)
        else
            expected = -1d0
        end if
    end function
    subroutine column(j, t)
        integer, intent(in) :: j
        type(MPI_Datatype), intent(out) :: t
        call MPI_Type_create_subarray(2, [n + 2, n + 2], [n, 1], [1, j], MPI_ORDER_FORTRAN, &
                                      MPI_DOUBLE_PRECISION, t)
        call MPI_Type_commit(t)
    end subroutine
end program
